import Synchronization

/// A counting semaphore for async code: `wait()` suspends the task (never a thread) until a
/// permit is free; waiters are served first come, first served.
public final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: Mutex<State>

    public init(permits: Int) {
        precondition(permits > 0, "an AsyncSemaphore needs at least one permit")
        state = Mutex(State(available: permits))
    }

    /// Takes a permit, suspending until one is free.
    public func wait() async {
        let acquired = state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Takes a permit if one is free now; false (nothing taken) otherwise.
    public func tryWait() -> Bool {
        state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
    }

    /// Returns a permit, handing it straight to the oldest waiter if there is one.
    public func signal() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.head < state.waiters.count {
                let waiter = state.waiters[state.head]
                state.head += 1
                if state.head > 1024, state.head * 2 > state.waiters.count {
                    state.waiters.removeFirst(state.head)
                    state.head = 0
                }
                return waiter
            }
            state.available += 1
            return nil
        }
        next?.resume()
    }
}
