import Synchronization
import Testing
import OSThread

/// The permit pool as the worker's send window: the recipients window a job waits in before it
/// is composed (real tasks, no broker).
@Suite(.timeLimit(.minutes(1))) struct PermitPoolTests {
    @Test func aJobTakesOnePermitPerRecipientAndALargeJobTakesTheWholeWindow() async {
        let window = PermitPool(capacity: 10)
        #expect(await window.acquire(3) == 3)
        #expect(window.available == 7)
        #expect(await window.acquire(0) == 1)  // a topic or an empty list still takes one
        window.release(4)
        #expect(await window.acquire(1_000) == 10)  // more recipients than the window: all of it, not forever
        window.release(10)
        #expect(window.available == 10)
    }

    /// First come, first served: a job that does not fit waits, and a smaller one behind it does
    /// not overtake it; releasing lets both in, in order.
    @Test func waitersAreLetInInOrderOnceTheirShareIsFree() async throws {
        let window = PermitPool(capacity: 10)
        let held = await window.acquire(8)
        let order = Order()
        let big = Task { _ = await window.acquire(5); order.append(5) }
        try await waitUntil { window.queued == 1 }
        let small = Task { _ = await window.acquire(1); order.append(1) }
        try await waitUntil { window.queued == 2 }
        // 4 free: the small job would fit, but the big one at the head does not, so both wait.
        window.release(2)
        #expect(window.queued == 2, "the small job overtook the big one waiting ahead of it")
        #expect(window.available == 4)
        #expect(order.values.isEmpty)
        window.release(held - 2)
        await big.value
        await small.value
        #expect(Set(order.values) == [5, 1])
        #expect(window.queued == 0)
        #expect(window.available == 4)
    }

    /// As the FCM transports' cap: never more than the permits at once, however many ask.
    @Test func neverMoreThanThePermitsRunAtOnce() async {
        let pool = PermitPool(capacity: 3)
        let counters = Counters()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    await pool.acquire()
                    counters.state.withLock { $0.running += 1; $0.peak = max($0.peak, $0.running) }
                    await Task.yield()
                    counters.state.withLock { $0.running -= 1; $0.done += 1 }
                    pool.release()
                }
            }
        }
        let final = counters.state.withLock { $0 }
        #expect(final.done == 50 && final.peak <= 3 && final.running == 0 && pool.available == 3)
    }

    /// `tryAcquire` (a transport starting a request without a task) takes a free permit, fails
    /// with nothing taken when none is free, and does not jump ahead of a waiter.
    @Test func tryAcquireTakesOnlyAFreePermitNobodyWaitsFor() async throws {
        let pool = PermitPool(capacity: 2)
        #expect(pool.tryAcquire() && pool.tryAcquire())
        let third = pool.tryAcquire()
        #expect(!third && pool.available == 0)
        let waiter = Task { await pool.acquire(2) }
        try await waitUntil { pool.queued == 1 }
        pool.release()
        let jumped = pool.tryAcquire()
        #expect(!jumped, "a permit freed while a waiter needs it is not taken by tryAcquire")
        if jumped { pool.release() }  // hand the stolen permit back, so that a failure fails instead of hanging
        pool.release()
        #expect(await waiter.value == 2)
        pool.release(2)
        #expect(pool.available == 2)
    }

    private final class Order: Sendable {
        private let list = Mutex<[Int]>([])
        func append(_ n: Int) { list.withLock { $0.append(n) } }
        var values: [Int] { list.withLock { $0 } }
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw PoolTestTimeout("condition not met within 10 s") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// The callback form of the pool: what the worker's job admission uses, so that a job waiting
/// for its turn holds no task (no broker).
@Suite struct PermitPoolCallbackTests {
    @Test func aCallbackIsCalledAtOnceWhenItsShareIsFreeAndOtherwiseByTheReleaseThatFreesIt() {
        let window = PermitPool(capacity: 10)
        let granted = Granted()
        window.acquire(6) { granted.append(("first", $0)) }
        #expect(granted.values.map(\.0) == ["first"], "called on the caller's thread while the share was free")
        window.acquire(50) { granted.append(("whole", $0)) }  // clamped to the capacity, waits for all of it
        window.acquire(1) { granted.append(("small", $0)) }   // fits, but does not overtake the head
        #expect(granted.values.count == 1 && window.queued == 2 && window.available == 4)
        window.release(6)
        #expect(granted.values.map(\.0) == ["first", "whole"] && granted.values.last?.1 == 10)
        window.release(10)
        #expect(granted.values.map(\.0) == ["first", "whole", "small"])
        window.release(1)
        #expect(window.available == 10 && window.queued == 0)
    }

    /// Tasks and callbacks wait in one line, first come first served.
    @Test func callbacksAndSuspendedTasksWaitInOneLine() async throws {
        let window = PermitPool(capacity: 4)
        let held = await window.acquire(4)
        let granted = Granted()
        window.acquire(2) { granted.append(("callback", $0)) }
        let task = Task { _ = await window.acquire(2); granted.append(("task", 2)) }
        let deadline = ContinuousClock.now + .seconds(10)
        while window.queued < 2 {
            guard ContinuousClock.now < deadline else { throw PoolTestTimeout("the task never queued") }
            try await Task.sleep(for: .milliseconds(5))
        }
        window.release(2)
        #expect(granted.values.map(\.0) == ["callback"], "the callback came first and only it fits")
        window.release(held - 2)
        await task.value
        #expect(granted.values.map(\.0) == ["callback", "task"])
    }

    private final class Granted: Sendable {
        private let list = Mutex<[(String, Int)]>([])
        func append(_ value: (String, Int)) { list.withLock { $0.append(value) } }
        var values: [(String, Int)] { list.withLock { $0 } }
    }
}

private final class Counters: Sendable {
    let state = Mutex((running: 0, peak: 0, done: 0))
}

private struct PoolTestTimeout: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
