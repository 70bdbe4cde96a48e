import Glibc

/// The process's open-file limit (`RLIMIT_NOFILE`).
public enum FileDescriptorLimit {
    /// Raises the soft limit to the hard limit (often 1 024 → 1 048 576 under systemd) so that a
    /// busy endpoint or many broker connections do not run out of descriptors; returns the soft
    /// limit in force afterwards. Called once at process start by every command.
    @discardableResult
    public static func raiseSoftToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return -1 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur >= UInt(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
