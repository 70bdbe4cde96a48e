import Foundation

/// The test process's open file descriptors, for tests that a component leaves none behind (a
/// closed session, a stopped server, a transport shut down).
public enum OpenDescriptors {
    /// How many descriptors the process holds now (the entries of /proc/self/fd); -1 if unreadable.
    public static var count: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }
}
