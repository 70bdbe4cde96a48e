import Glibc
import Synchronization

/// A probe of how often work moves from one thread to another: every item a thread hands to
/// another loop's inbox (`LoopInbox`), and every delivery a consumer thread hands to a task
/// through a stream. Per process, always on (one relaxed atomic add per hand-off, next to the
/// wake-up it usually costs). Tests and benchmarks read it to count a job's hand-offs; the goal
/// of the delivery path is none on the happy path (docs/decisions/0082).
public enum ThreadHandoffs {
    private static let counter = Atomic<Int>(0)

    /// Hand-offs so far in this process.
    public static var count: Int { counter.load(ordering: .relaxed) }

    /// Counts one hand-off.
    public static func record() { counter.add(1, ordering: .relaxed) }

    /// The calling thread's identity, to tell a loop's own submissions from other threads'.
    static var currentThread: UInt { UInt(pthread_self()) }
}
