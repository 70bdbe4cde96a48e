import FoundationEssentials
import OSThread

/// Resumes waiting tasks at their deadlines from one thread, every waiter due within the same
/// millisecond at once: a project sending at its quota makes every send wait a little, and a
/// timer per send (`Task.sleep`) cost more CPU and context switches than the send itself. Here
/// the cost is one wake-up per millisecond whatever the number of waiters.
///
/// A waiter is a suspended task (`sleep`) or a callback (`call`), which waits without holding a
/// task. A cancelled task is resumed at once. The thread starts with the first wait and stays.
final class PacedWakeups: @unchecked Sendable {
    /// The one instance of the process.
    static let shared = PacedWakeups()

    /// How long past the earliest deadline the thread sleeps, so that the waiters due meanwhile
    /// are resumed in the same pass.
    static let batching: Duration = .milliseconds(1)

    private struct Waiter {
        let deadline: ContinuousClock.Instant
        let id: UInt64
        let resume: @Sendable () -> Void
    }

    private let condition = OSCondition()
    /// Sorted by deadline (sends reserve later and later tokens, so new ones go at the end).
    private var waiters: [Waiter] = []
    /// Waiters given an id and not queued yet.
    private var arriving: Set<UInt64> = []
    /// Waiters cancelled before they were queued: resumed as soon as they try.
    private var cancelledEarly: Set<UInt64> = []
    private var nextID: UInt64 = 0
    private var started = false

    /// Returns after `delay` (never before; up to `batching` later), or at once when the task
    /// is cancelled.
    func sleep(for delay: Duration) async {
        guard delay > .zero else { return }
        let deadline = ContinuousClock.now + delay
        let id = arrivingID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                enqueue(Waiter(deadline: deadline, id: id, resume: { continuation.resume() }))
            }
        } onCancel: {
            wakeEarly(id)
        }
    }

    /// Calls `action` after `delay` (never before; up to `batching` later), from this type's
    /// thread; at once, on the caller's thread, when `delay` is not positive.
    func call(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        guard delay > .zero else { return action() }
        let id = arrivingID()
        enqueue(Waiter(deadline: ContinuousClock.now + delay, id: id, resume: action))
    }

    /// A new waiter's id, marked as arriving until `enqueue` queues it.
    private func arrivingID() -> UInt64 {
        condition.withLock {
            nextID &+= 1
            arriving.insert(nextID)
            return nextID
        }
    }

    private func enqueue(_ waiter: Waiter) {
        condition.lock()
        arriving.remove(waiter.id)
        if cancelledEarly.remove(waiter.id) != nil {
            condition.unlock()
            waiter.resume()
            return
        }
        if !started {
            started = true
            OSThread.start(name: "paced-wakeups") { [self] in run() }
        }
        var at = waiters.count
        while at > 0, waiters[at - 1].deadline > waiter.deadline { at -= 1 }
        waiters.insert(waiter, at: at)
        if at == 0 { condition.signal() }  // a new earliest deadline: the thread sleeps less
        condition.unlock()
    }

    private func wakeEarly(_ id: UInt64) {
        condition.lock()
        guard let index = waiters.firstIndex(where: { $0.id == id }) else {
            if arriving.contains(id) { cancelledEarly.insert(id) }  // otherwise it was resumed already
            condition.unlock()
            return
        }
        let waiter = waiters.remove(at: index)
        condition.unlock()
        waiter.resume()
    }

    private func run() {
        var due: [Waiter] = []
        condition.lock()
        while true {
            guard let first = waiters.first else {
                condition.wait()
                continue
            }
            let now = ContinuousClock.now
            if first.deadline > now {
                // Sleep past the earliest deadline by `batching`: the waiters due meanwhile wake
                // with it, none before its own deadline.
                condition.wait(for: first.deadline - now + Self.batching)
                continue
            }
            let count = waiters.prefix(while: { $0.deadline <= now }).count
            due.append(contentsOf: waiters[..<count])
            waiters.removeFirst(count)
            condition.unlock()
            for waiter in due { waiter.resume() }
            due.removeAll(keepingCapacity: true)
            condition.lock()
        }
    }
}
