import ServiceRuntime
import Synchronization

/// Counts deliveries being processed, so that a lane can wait for them to drain within a deadline, and then abandon
/// the rest (they stay unacked and the broker requeues them).
final class InFlightTracker: Sendable {
    private struct State {
        var count = 0
        var abandoned = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func enter() { state.withLock { $0.count += 1 } }

    func leave() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.count -= 1
            guard s.count == 0 else { return [] }
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    /// True once the lane gave up waiting: late finishers must not publish or ack.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Waits until nothing is in flight or `timeout` passed; returns false (and abandons the
    /// rest) on timeout.
    func drain(timeout: Duration) async -> Bool {
        await ConnectionLifecycle.drain(within: timeout, giveUp: abandon) {
            // Released by the last `leave`, or by `abandon` (the timeout's `giveUp`).
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { s -> Bool in
                    if s.count == 0 { return true }
                    s.waiters.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    /// Gives up on what is in flight (the consumer connection is gone, or the deadline passed):
    /// late finishers must not start publishing; their deliveries stay unacked.
    func abandon() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.abandoned = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }
}
