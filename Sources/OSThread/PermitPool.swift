import Synchronization

/// A pool of permits, the one bound on work in flight used everywhere: the worker's send window
/// (`--max-in-flight`: each target of a job takes a permit before it is composed and gives it
/// back once sent, so memory follows the sends in flight, not the prefetch times the recipients
/// per job), its job admission (the same pool twice as large: a job takes a permit per recipient
/// until it is settled), and the FCM transports' cap on requests in flight.
///
/// First come, first served: a waiter asking for several permits at the head waits for its
/// share rather than being overtaken forever by smaller ones, and `tryAcquire` does not jump the
/// line. A waiter is a suspended task (`acquire(_:)`) or a callback (`acquire(_:then:)`), which
/// waits without holding a task.
public final class PermitPool: Sendable {
    /// How a waiter is let in.
    private enum Resumption {
        case task(CheckedContinuation<Void, Never>)
        case callback(@Sendable (Int) -> Void)

        func grant(_ weight: Int) {
            switch self {
            case .task(let continuation): continuation.resume()
            case .callback(let granted): granted(weight)
            }
        }
    }
    private struct Waiter {
        var weight: Int
        var resumption: Resumption
    }
    private struct State {
        var available: Int
        /// Waiters from `head` on; those before it were let in (nil, so that a callback's captures go with it).
        var waiters: [Waiter?] = []
        var head = 0

        /// Takes `weight` permits if they are free and nobody waits ahead (first come, first served).
        mutating func takeIfFree(_ weight: Int) -> Bool {
            guard head == waiters.count, available >= weight else { return false }
            available -= weight
            return true
        }
    }

    /// Permits in all.
    public let capacity: Int
    private let state: Mutex<State>

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Mutex(State(available: max(1, capacity)))
    }

    /// Takes `weight` permits (clamped to 1...capacity), waiting until they are free; returns the
    /// number taken, to hand back to `release`.
    @discardableResult
    public func acquire(_ weight: Int = 1) async -> Int {
        let weight = clamped(weight)
        if tryAcquire(weight) { return weight }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            take(weight, or: .task(c))
        }
        return weight
    }

    /// Takes `weight` permits (clamped to 1...capacity) and calls `granted` with the number taken,
    /// to hand back to `release`: at once, on the caller's thread, when they are free; otherwise
    /// from the `release` that frees them. Nothing is suspended meanwhile: a waiting job costs
    /// its callback, not a task.
    public func acquire(_ weight: Int = 1, then granted: @escaping @Sendable (Int) -> Void) {
        take(clamped(weight), or: .callback(granted))
    }

    /// Takes `weight` permits (clamped to 1...capacity) if they are free and nobody waits ahead;
    /// false, with nothing taken, otherwise.
    public func tryAcquire(_ weight: Int = 1) -> Bool {
        let weight = clamped(weight)
        return state.withLock { $0.takeIfFree(weight) }
    }

    private func clamped(_ weight: Int) -> Int { min(max(weight, 1), capacity) }

    /// Takes `weight` permits now if they are free and nobody waits before, or queues `resumption`.
    private func take(_ weight: Int, or resumption: Resumption) {
        let now = state.withLock { s -> Bool in
            if s.takeIfFree(weight) { return true }
            s.waiters.append(Waiter(weight: weight, resumption: resumption))
            return false
        }
        if now { resumption.grant(weight) }
    }

    /// Gives back `weight` permits and lets in the waiters at the head that now fit.
    public func release(_ weight: Int = 1) {
        guard weight > 0 else { return }
        let ready = state.withLock { s -> [Waiter] in
            s.available += weight
            var ready: [Waiter] = []
            while s.head < s.waiters.count, let waiter = s.waiters[s.head], waiter.weight <= s.available {
                s.available -= waiter.weight
                ready.append(waiter)
                s.waiters[s.head] = nil
                s.head += 1
            }
            if s.head == s.waiters.count {
                s.waiters.removeAll(keepingCapacity: true)
                s.head = 0
            } else if s.head > 1024, s.head * 2 > s.waiters.count {
                s.waiters.removeFirst(s.head)
                s.head = 0
            }
            return ready
        }
        for waiter in ready { waiter.resumption.grant(waiter.weight) }
    }

    /// Permits free right now (for tests and metrics).
    public var available: Int { state.withLock { $0.available } }

    /// Waiters waiting for their share.
    public var queued: Int { state.withLock { $0.waiters.count - $0.head } }
}
