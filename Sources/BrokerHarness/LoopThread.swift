import Glibc
import OSThread

/// Runs `body` with a new `PollLoop` on a thread of its own (never a task's thread: a loop is
/// the thread's for as long as it lives), for tests of what runs as a loop's source.
public func onLoopThread<T: Sendable>(_ body: @escaping @Sendable (PollLoop) -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        OSThread.start(name: "poll-loop-test") { done.resume(returning: body(PollLoop())) }
    }
}

extension PollLoop {
    /// Turns this loop (no descriptors of its own) until `condition` holds or `seconds` pass;
    /// returns whether it held.
    public func turn(until condition: () -> Bool, seconds: Double = 10) -> Bool {
        let deadline = PollLoop.now() &+ UInt64(seconds * 1e9)
        var own: [pollfd] = []
        while !condition() {
            guard PollLoop.now() < deadline else { return false }
            turn(&own, timeoutMillis: 20)
        }
        return true
    }
}
