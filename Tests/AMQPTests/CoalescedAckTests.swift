import AMQP
import BrokerHarness
import Foundation
import Testing

/// A consumer started with `coalescingAcks`, against the real broker: what it acks together is
/// never a delivery left unfinished, and what it had not acked comes back when its channel goes.
@Suite("Coalesced consumer acks", .timeLimit(.minutes(2)))
struct CoalescedAckTests {
    @Test func completedDeliveriesAreAckedAndTheUnfinishedOneComesBackAtClose() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("coalesced")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        let bodies = try publishTen(queue, settings: settings)

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 10, coalescingAcks: true)
        let held = try await take(10, from: consumer)
        for delivery in held.dropFirst() { consumer.complete(delivery.deliveryTag) }  // the first is never finished
        await consumer.close()

        let back = try drainQueue(queue, settings: settings, expecting: 1)
        #expect(back.map(\.body) == [held[0].body])
        #expect(Set(held.map(\.body)) == bodies)
    }

    /// The connection dies while completions wait to be acked (behind an unfinished delivery):
    /// whatever was not acked comes back, the unfinished one always; nothing is lost.
    @Test func aLostConnectionWithCompletionsPendingLosesNothing() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.makeVhost()
        defer { try? broker.deleteVhost(settings.vhost) }
        let queue = "coalesced"
        let bodies = try publishTen(queue, settings: settings)

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 100, coalescingAcks: true)
        let held = try await take(10, from: consumer)
        for delivery in held.dropFirst() { consumer.complete(delivery.deliveryTag) }
        try broker.closeAllConnections(vhost: settings.vhost, reason: "test: connection lost with acks pending")
        await #expect(throws: AMQPError.self) {
            try await withDeadline(15, "stream end after close_connection") { for try await _ in consumer.deliveries {} }
        }
        await consumer.close()

        let back = try drainQueue(queue, settings: settings, expecting: 1)
        #expect(back.contains { $0.body == held[0].body }, "the unfinished delivery was acked")
        let completed = Set(held.dropFirst().map(\.body))
        #expect(Set(back.map(\.body)).union(completed) == bodies, "a delivery was lost")
    }

    private func publishTen(_ queue: String, settings: AMQPSettings) throws -> Set<Data> {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.declareQueue(queue)
        let bodies = (0..<10).map { Data("m\($0)".utf8) }
        for body in bodies { try client.publishConfirmed(exchange: "", routingKey: queue, body: body) }
        return Set(bodies)
    }
}
