import Synchronization

/// What other threads hand to one loop thread, and not yet taken: the one inbox of every loop
/// (the AMQP connection threads, the HTTP/2 and curl loops).
///
/// Wake-ups: `submit` calls `wake` only when it makes the inbox non-empty, under the lock (so
/// `close` cannot tear the wake-up channel down in between). The loop takes the whole inbox at the
/// top of each pass and sleeps only where a pending wake-up returns; so a non-empty inbox always
/// has a wake-up pending or a pass coming, and a burst of submits costs one wake-up and one pass.
///
/// A submit from a thread other than the one that takes counts as a hand-off (`ThreadHandoffs`).
public final class LoopInbox<Item: Sendable>: Sendable {
    private struct State {
        var queue: [Item] = []
        var closed = false
    }

    private let state = Mutex(State())
    /// The thread that takes (0 until its first `take`).
    private let owner = Atomic<UInt>(0)

    public init() {}

    /// Queues `item`, calling `wake` if the inbox was empty; false (nothing queued) once closed.
    public func submit(_ item: Item, wake: () -> Void) -> Bool {
        let owner = owner.load(ordering: .relaxed)
        if owner != 0 && owner != ThreadHandoffs.currentThread { ThreadHandoffs.record() }
        return state.withLock { s in
            guard !s.closed else { return false }
            s.queue.append(item)
            if s.queue.count == 1 { wake() }
            return true
        }
    }

    /// `submit`, woken through `wakeup`.
    public func submit(_ item: Item, wakeup: LoopWakeup) -> Bool { submit(item, wake: wakeup.signal) }

    /// Refuses further items (what is queued stays, for `take`); true only the first time.
    public func close() -> Bool {
        state.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
    }

    /// True once `close` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Moves everything queued so far into `items` (emptied first), in order, and tells whether
    /// the inbox is closed (the loop then stops). The two buffers trade places: the loop keeps
    /// `items` from pass to pass and the queue reuses its capacity, so a pass allocates nothing.
    @discardableResult
    public func take(into items: inout [Item]) -> Bool {
        if owner.load(ordering: .relaxed) == 0 { owner.store(ThreadHandoffs.currentThread, ordering: .relaxed) }
        items.removeAll(keepingCapacity: true)
        return state.withLock { s in
            swap(&items, &s.queue)
            return s.closed
        }
    }
}
