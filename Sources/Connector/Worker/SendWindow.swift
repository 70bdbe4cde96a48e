import Synchronization

/// How many recipients the process composes and sends at once (`--max-in-flight`): each target
/// of a job takes a permit before it is composed and gives it back once sent (`JobProcessor`).
/// Targets beyond it wait with nothing composed, so memory follows the sends in flight, not the
/// prefetch times the recipients per job.
///
/// The same pool, twice as large, is the worker's job admission (`JobProcessor.jobAdmission`):
/// a job takes a permit per recipient (at most the capacity) for as long as it is being sent.
///
/// First come, first served: a waiter asking for several permits at the head waits for its
/// share rather than being overtaken forever by smaller ones.
final class SendWindow: Sendable {
    private struct Waiter {
        var weight: Int
        var continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var head = 0
    }

    /// Permits in all.
    let capacity: Int
    private let state: Mutex<State>

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Mutex(State(available: max(1, capacity)))
    }

    /// Takes `weight` permits (clamped to 1...capacity), waiting until they are free; returns the
    /// number taken, to hand back to `release`.
    func acquire(_ weight: Int) async -> Int {
        let weight = min(max(weight, 1), capacity)
        let now = state.withLock { s -> Bool in
            guard s.head == s.waiters.count, s.available >= weight else { return false }
            s.available -= weight
            return true
        }
        if now { return weight }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resume = state.withLock { s -> Bool in
                if s.head == s.waiters.count, s.available >= weight {
                    s.available -= weight
                    return true
                }
                s.waiters.append(Waiter(weight: weight, continuation: c))
                return false
            }
            if resume { c.resume() }
        }
        return weight
    }

    /// Gives back `weight` permits and lets in the waiters at the head that now fit.
    func release(_ weight: Int) {
        guard weight > 0 else { return }
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.available += weight
            var ready: [CheckedContinuation<Void, Never>] = []
            while s.head < s.waiters.count, s.waiters[s.head].weight <= s.available {
                s.available -= s.waiters[s.head].weight
                ready.append(s.waiters[s.head].continuation)
                s.head += 1
            }
            if s.head > 1024, s.head * 2 > s.waiters.count {
                s.waiters.removeFirst(s.head)
                s.head = 0
            }
            return ready
        }
        for c in ready { c.resume() }
    }

    /// Permits free right now (for tests and metrics).
    var available: Int { state.withLock { $0.available } }

    /// Jobs waiting for their share.
    var queued: Int { state.withLock { $0.waiters.count - $0.head } }
}
