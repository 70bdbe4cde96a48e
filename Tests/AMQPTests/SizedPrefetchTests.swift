import AMQP
import BrokerHarness
import Foundation
import Synchronization
import Testing

/// A consumer whose prefetch is sized to a byte budget (`AMQPConsumer.start(sizing:)`), against
/// the real broker: large deliveries never pile up past the budget, small ones let the window
/// grow, and re-consuming on the way loses and repeats nothing.
@Suite("Sized prefetch", .timeLimit(.minutes(2)))
struct SizedPrefetchTests {
    @Test func largeDeliveriesStopAtTheBudgetFromTheFirstOne() async throws {
        let (broker, settings, queue) = try await freshQueue("sized-large")
        defer { try? broker.deleteVhost(settings.vhost) }
        let bodies = try publish(30, bytes: 16 << 10, to: queue, settings: settings)
        let sizing = PrefetchSizer(budgetBytes: 64 << 10, maxPrefetch: 100, largestDelivery: 16 << 10)
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 100, sizing: sizing)
        #expect(consumer.prefetch == 4)

        let held = try await take(4, from: consumer)
        try await expectReady(26, in: queue, settings: settings, holding: "four 16 KiB deliveries fill a 64 KiB budget")
        for delivery in held { consumer.complete(delivery.deliveryTag) }
        let rest = try await takeCompleting(26, from: consumer)
        await consumer.close()

        #expect(Set((held + rest).map(\.body)) == bodies && held.count + rest.count == 30)
        try await expectReady(0, in: queue, settings: settings, holding: "everything was acked")
    }

    /// A quorum queue (the job queue is one) keeps a cancelled consumer's unacked deliveries
    /// checked out to the channel, as a classic queue does: re-consuming returns none of them.
    @Test(arguments: [false, true])
    func smallDeliveriesLetTheWindowGrowToItsMaximum(quorum: Bool) async throws {
        let (broker, settings, queue) = try await freshQueue("sized-small", quorum: quorum)
        defer { try? broker.deleteVhost(settings.vhost) }
        let bodies = try publish(300, bytes: 100, to: queue, settings: settings)
        let sizing = PrefetchSizer(budgetBytes: 1 << 20, maxPrefetch: 64, largestDelivery: 64 << 10)
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 64, sizing: sizing)
        var seen: [Delivery] = []
        var steps: [UInt16] = [consumer.prefetch]
        while consumer.prefetch < 64 {
            let before = consumer.prefetch
            let window = try await take(Int(before), from: consumer)  // held, not completed: a full window
            try await waitUntil("the prefetch grows past \(before)") { consumer.prefetch > before }
            for delivery in window { consumer.complete(delivery.deliveryTag) }
            seen += window
            steps.append(consumer.prefetch)
        }
        seen += try await takeCompleting(300 - seen.count, from: consumer)
        await consumer.close()

        #expect(steps.first == 16 && steps.last == 64 && steps == steps.sorted(), "\(steps)")
        #expect(Set(seen.map(\.body)) == bodies && seen.count == 300, "a delivery was lost or repeated across re-consumes")
        try await expectReady(0, in: queue, settings: settings, holding: "everything was acked")
    }

    /// The broker may not have pushed every large delivery before the consumer cancels at its
    /// budget (a quorum queue under load returns credit in pieces): what it did not push stays
    /// ready and comes after the re-consume, so the test counts what arrived instead of assuming 20.
    @Test(arguments: [false, true])
    func overTheBudgetTheConsumerShrinksAndWaitsForRoom(quorum: Bool) async throws {
        let (broker, settings, queue) = try await freshQueue("sized-shrink", quorum: quorum)
        defer { try? broker.deleteVhost(settings.vhost) }
        var bodies = try publish(64, bytes: 100, to: queue, settings: settings)
        let sizing = PrefetchSizer(budgetBytes: 128 << 10, maxPrefetch: 64, largestDelivery: 1 << 10)
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 64, sizing: sizing)
        #expect(consumer.prefetch == 64)
        let tap = DeliveryTap(consumer)

        let small = try await tap.first(64)
        for delivery in small { consumer.complete(delivery.deliveryTag) }
        // The large ones are published once every small one is completed: published together, a
        // large one could arrive while small ones were still held (their completions reach the
        // consumer's thread in batches), and the shrink would be sized by a mixed average.
        try await expectReady(0, in: queue, settings: settings, holding: "the small ones are all delivered")
        bodies.formUnion(try publish(20, bytes: 32 << 10, to: queue, settings: settings, tag: "large"))
        try await waitUntil("the consumer cancels and waits for room") { consumer.prefetch == 0 }
        let large = try await tap.settled().dropFirst(64)  // at least 128 KiB held: over the budget
        let notPushed = UInt32(20 - large.count)
        #expect(large.count >= 4, "\(large.count) large deliveries held when the consumer cancelled")
        bodies.formUnion(try publish(10, bytes: 32 << 10, to: queue, settings: settings, tag: "later"))
        try await expectReady(10 + notPushed, in: queue, settings: settings, holding: "a waiting consumer takes nothing")

        // Half the budget (64 KiB) holds two; it consumes again once 64 KiB are held at most.
        for delivery in large.dropLast(3) { consumer.complete(delivery.deliveryTag) }
        try await expectReady(10 + notPushed, in: queue, settings: settings, holding: "96 KiB held leave no room for two more")
        consumer.complete(large[large.endIndex - 3].deliveryTag)
        try await waitUntil("the consumer consumes again with a prefetch of 2") { consumer.prefetch == 2 }
        for delivery in large.suffix(2) { consumer.complete(delivery.deliveryTag) }
        let rest = try await tap.first(94, completingFrom: 64 + large.count, on: consumer).dropFirst(64 + large.count)
        await consumer.close()
        tap.stop()

        let all = small + large + rest
        #expect(Set(all.map(\.body)) == bodies && all.count == 94, "a delivery was lost or repeated across re-consumes")
        try await expectReady(0, in: queue, settings: settings, holding: "everything was acked")
    }

    @Test func cancellingAWaitingConsumerEndsItsStreamAndLosesNothing() async throws {
        let (broker, settings, queue) = try await freshQueue("sized-cancel")
        defer { try? broker.deleteVhost(settings.vhost) }
        let first = try publish(4, bytes: 64 << 10, to: queue, settings: settings)
        let sizing = PrefetchSizer(budgetBytes: 128 << 10, maxPrefetch: 64, largestDelivery: 16 << 10)
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 64, sizing: sizing)
        let held = try await take(4, from: consumer)  // 256 KiB: twice the budget
        try await waitUntil("the consumer cancels and waits for room") { consumer.prefetch == 0 }
        let later = try publish(3, bytes: 100, to: queue, settings: settings, tag: "later")

        consumer.cancel()
        try await withDeadline(15, "the stream ends after cancel") { for try await _ in consumer.deliveries {} }
        for delivery in held.prefix(2) { consumer.complete(delivery.deliveryTag) }
        await consumer.close()

        #expect(Set(held.map(\.body)) == first)
        let back = try drainQueue(queue, settings: settings, expecting: 5).map(\.body)
        #expect(Set(back) == Set(held.suffix(2).map(\.body)).union(later), "the uncompleted ones come back, the rest stay queued")
    }

    // MARK: helpers

    /// A vhost of its own (delete it after the test) with a classic or quorum queue `name` in it.
    private func freshQueue(_ name: String, quorum: Bool = false) async throws -> (TestBroker, AMQPSettings, String) {
        let broker = try await TestBroker.shared()
        let settings = try broker.makeVhost()
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        _ = try client.declareQueue(name, arguments: quorum ? ["x-queue-type": "quorum"] : [:])
        return (broker, settings, name)
    }

    private func publish(_ count: Int, bytes: Int, to queue: String, settings: AMQPSettings,
                         tag: String = "m") throws -> Set<Data> {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        var bodies = Set<Data>()
        for i in 0..<count {
            var body = Data("\(tag)\(i):".utf8)
            body.append(Data(repeating: UInt8(ascii: "x"), count: max(0, bytes - body.count)))
            try client.publishConfirmed(exchange: "", routingKey: queue, body: body)
            bodies.insert(body)
        }
        return bodies
    }

    /// Takes `count` deliveries, completing each as it comes.
    private func takeCompleting(_ count: Int, from consumer: AMQPConsumer) async throws -> [Delivery] {
        try await withDeadline(30, "waiting for \(count) deliveries") {
            var taken: [Delivery] = []
            guard count > 0 else { return taken }
            for try await delivery in consumer.deliveries {
                consumer.complete(delivery.deliveryTag)
                taken.append(delivery)
                if taken.count == count { break }
            }
            return taken
        }
    }

    /// Fails unless `queue` has exactly `ready` messages ready, checked over 0.5 s (the broker
    /// would have pushed more by then).
    private func expectReady(_ ready: UInt32, in queue: String, settings: AMQPSettings, holding why: String) async throws {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try await Task.sleep(for: .milliseconds(500))
        let count = try client.messageCount(queue: queue)
        #expect(count == ready, "\(why): \(count) ready, expected \(ready)")
    }
}

/// Every delivery of a consumer, gathered by a task of its own so that a test can look at what
/// arrived so far without waiting for a count the broker may never reach.
private final class DeliveryTap: Sendable {
    private final class Gathered: Sendable { let list = Mutex<[Delivery]>([]) }
    private let gathered = Gathered()
    private let reader: Task<Void, Never>

    init(_ consumer: AMQPConsumer) {
        let gathered = self.gathered
        reader = Task { do { for try await delivery in consumer.deliveries { gathered.list.withLock { $0.append(delivery) } } } catch {} }
    }

    func stop() { reader.cancel() }

    /// The first `count` deliveries, once they arrived; those from index `completingFrom` on
    /// are completed on `consumer` as they come.
    func first(_ count: Int, completingFrom: Int? = nil, on consumer: AMQPConsumer? = nil) async throws -> [Delivery] {
        let deadline = ContinuousClock.now + .seconds(30)
        var completed = completingFrom ?? Int.max
        while true {
            let now = gathered.list.withLock { $0 }
            if let consumer { while completed < now.count { consumer.complete(now[completed].deliveryTag); completed += 1 } }
            if now.count >= count { return Array(now.prefix(count)) }
            guard ContinuousClock.now < deadline else { throw DeadlineExceeded(what: "waiting for \(count) deliveries, \(now.count) came") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Everything taken, once nothing more has come for a second.
    func settled() async throws -> [Delivery] {
        var last = -1
        while true {
            let now = gathered.list.withLock { $0 }
            if now.count == last { return now }
            last = now.count
            try await Task.sleep(for: .seconds(1))
        }
    }
}
