import Synchronization
import Testing
@testable import Connector

/// The recipients window a job waits in before it is composed (real tasks, no broker).
@Suite(.timeLimit(.minutes(1))) struct SendWindowTests {
    @Test func aJobTakesOnePermitPerRecipientAndALargeJobTakesTheWholeWindow() async {
        let window = SendWindow(capacity: 10)
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
        let window = SendWindow(capacity: 10)
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

    private final class Order: Sendable {
        private let list = Mutex<[Int]>([])
        func append(_ n: Int) { list.withLock { $0.append(n) } }
        var values: [Int] { list.withLock { $0 } }
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw FixtureError("condition not met within 10 s") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
