import CSystem
import Glibc

/// Keeps the private keys and access tokens a process holds out of core files: the core size
/// limit drops to 0 and the process becomes non-dumpable. Non-dumpable also means other users
/// (not root) can neither ptrace it nor read its /proc/<pid> files, which is intended.
public enum ProcessHardening {
    /// Applies both settings; a failure of either is reported, not fatal.
    /// - Returns: a description of what could not be applied, nil when both were.
    @discardableResult
    public static func disableCoreDumps() -> String? {
        var problems: [String] = []
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        if setrlimit(RLIMIT_CORE_ID, &limit) != 0 {
            problems.append("setrlimit(RLIMIT_CORE, 0) failed: errno \(errno)")
        }
        if pc_set_dumpable(0) != 0 {
            problems.append("prctl(PR_SET_DUMPABLE, 0) failed: errno \(errno)")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    private static var RLIMIT_CORE_ID: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_CORE.rawValue) }
}
