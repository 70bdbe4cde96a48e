import AMQP
import BrokerHarness
import Foundation
import Testing

@Suite("Broker-side failures", .timeLimit(.minutes(3)))
struct FailureTests {
    @Test func serverClosedConnectionEndsTheStreamAndUnackedMessagesComeBack() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.makeVhost()
        defer { try? broker.deleteVhost(settings.vhost) }
        let queue = "work"
        try declareTestQueue(queue, settings: settings)
        let client = try AMQPChannelClient(settings: settings)
        for i in 0..<10 { try client.publishConfirmed(exchange: "", routingKey: queue, body: Data("\(i)".utf8)) }
        client.close()

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 10)
        let held = try await take(10, from: consumer)
        #expect(held.allSatisfy { !$0.redelivered })
        try broker.closeAllConnections(vhost: settings.vhost, reason: "test: broker closed the connection")
        let error = await #expect(throws: AMQPError.self) {
            try await withDeadline(15, "stream end after close_connection") {
                for try await _ in consumer.deliveries {}
            }
        }
        #expect(error?.code == .connectionLost)
        consumer.ack(held[0].deliveryTag)  // too late: a no-op, the message comes back
        await consumer.close()

        let again = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 10)
        let redelivered = try await take(10, from: again)
        #expect(redelivered.allSatisfy { $0.redelivered })
        #expect(Set(redelivered.map(\.body)) == Set(held.map(\.body)))
        for delivery in redelivered { again.ack(delivery.deliveryTag) }
        await again.close()
    }

    @Test func publishingToAMissingExchangeThrowsAndThePublisherRecovers() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("after-404")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        let error = await #expect(throws: AMQPError.self) {
            try await withDeadline(10, "publish to a missing exchange") {
                try await publisher.publish(exchange: "no-such-exchange", routingKey: "x", body: Data("lost".utf8))
            }
        }
        #expect(error?.code == .channelClosed)
        #expect(error?.replyCode == 404)
        try await withDeadline(10, "publish after the channel error") {
            try await publisher.publish(exchange: "", routingKey: queue, body: Data("ok".utf8))
        }
        await publisher.close()
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == 1)
    }

    @Test func publishingAfterTheBrokerClosedTheConnectionFails() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.makeVhost()
        defer { try? broker.deleteVhost(settings.vhost) }
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        try broker.closeAllConnections(vhost: settings.vhost, reason: "test: publisher dropped")
        let error = await #expect(throws: AMQPError.self) {
            try await withDeadline(15, "publishes after connection loss") {
                // The loss is noticed on the next read; keep publishing until it surfaces.
                for _ in 0..<1_000 {
                    try await publisher.publish(exchange: "", routingKey: "nowhere", body: Data())
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
        }
        #expect(error?.code == .connectionLost || error?.code == .closed)
        await publisher.close()
    }

    @Test func basicGetReturnsMessagesThenNilAndPurgeEmpties() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("get")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.declareQueue(queue, arguments: ["x-queue-type": "quorum"])
        for i in 0..<3 { try client.publishConfirmed(exchange: "", routingKey: queue, body: Data("\(i)".utf8)) }
        let first = try #require(try client.get(queue: queue))
        #expect(first.body == Data("0".utf8))
        #expect(first.messageCount == 2)
        try client.reject(first.deliveryTag, requeue: true)
        #expect(try client.purgeQueue(queue) >= 2)
        try client.ack(0, multiple: true)
        _ = try client.purgeQueue(queue)
        #expect(try client.get(queue: queue) == nil)
        do {
            _ = try client.messageCount(queue: broker.uniqueName("missing"))
            Issue.record("passive declare of a missing queue succeeded")
        } catch {
            #expect(error.replyCode == 404)
        }
    }

    @Test func aFullRejectPublishQueueNacksAndOnlyThatPublishFails() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("full")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.declareQueue(queue, arguments: ["x-max-length": 1, "x-overflow": "reject-publish"])
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        try await publisher.publish(exchange: "", routingKey: queue, body: Data("first".utf8))
        let error = await #expect(throws: AMQPError.self) {
            try await withDeadline(10, "publish into a full queue") {
                try await publisher.publish(exchange: "", routingKey: queue, body: Data("second".utf8))
            }
        }
        #expect(error?.code == .nacked)
        _ = try client.purgeQueue(queue)
        try await publisher.publish(exchange: "", routingKey: queue, body: Data("third".utf8))
        await publisher.close()
        #expect(try client.get(queue: queue)?.body == Data("third".utf8))
    }

    @Test func tlsToAPlainPortFailsToConnectInsteadOfHanging() async throws {
        let broker = try await TestBroker.shared()
        var plain = try broker.settings()
        plain.tls = AMQPSettings.TLS()
        let settings = plain
        let error = await #expect(throws: AMQPError.self) {
            try await withDeadline(20, "TLS handshake against a plain port") {
                _ = try await ConfirmingPublisher.connect(settings: settings)
            }
        }
        #expect(error?.code == .connectionFailed)
    }
}
