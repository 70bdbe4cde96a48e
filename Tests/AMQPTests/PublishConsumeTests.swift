import AMQP
import BrokerHarness
import Foundation
import Synchronization
import Testing

@Suite("Publisher confirms and consumer acks against a real broker", .timeLimit(.minutes(3)))
struct PublishConsumeTests {
    @Test(arguments: [false, true])
    func fiveThousandStreamedPublishesAreAllConfirmedAndConsumedExactlyOnce(overTLS: Bool) async throws {
        let broker = try await TestBroker.shared()
        let settings = try overTLS ? broker.tlsSettings() : broker.settings()
        let queue = broker.uniqueName("bulk")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let total = 5_000

        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        try await withDeadline(60, "confirming \(total) publishes") {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<total {
                    group.addTask {
                        try await publisher.publish(exchange: "", routingKey: queue, body: Data("m\(i)".utf8),
                                                    properties: MessageProperties(messageID: "id-\(i)"))
                    }
                }
                try await group.waitForAll()
            }
        }
        await publisher.close()

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 500)
        let seen = try await withDeadline(60, "consuming \(total) messages") {
            var seen = Set<String>()
            for try await delivery in consumer.deliveries {
                seen.insert(String(decoding: delivery.body, as: UTF8.self))
                consumer.ack(delivery.deliveryTag)
                if seen.count == total { break }
            }
            return seen
        }
        await consumer.close()
        #expect(seen.count == total)

        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == 0)
    }

    /// A publish no queue takes fails with `.returned` instead of being acked and dropped, and
    /// only that one: routed publishes in flight around it, even with the same body, confirm.
    @Test func unroutablePublishFailsAsReturnedWhileRoutedOnesAroundItConfirm() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("routed")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        let outcomes = try await withDeadline(60, "confirming or returning 300 publishes") {
            try await withThrowingTaskGroup(of: (Int, AMQPError.Code?).self) { group in
                for i in 0..<300 {
                    let routed = i % 3 != 0
                    group.addTask {
                        do {
                            try await publisher.publish(exchange: "", routingKey: routed ? queue : queue + ".nowhere",
                                                        body: Data("same-\(i / 3)".utf8))
                            return (i, nil)
                        } catch let error as AMQPError {
                            return (i, error.code)
                        }
                    }
                }
                return try await group.reduce(into: [Int: AMQPError.Code?]()) { $0[$1.0] = $1.1 }
            }
        }
        await publisher.close()
        #expect(outcomes.count == 300)
        #expect(outcomes.filter { $0.value == .returned }.map(\.key).sorted() == Array(stride(from: 0, to: 300, by: 3)))
        #expect(outcomes.filter { $0.value == nil }.count == 200)
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == 200)
    }

    @Test func propertiesAndHeadersRoundTrip() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("props")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        let stamp = Date(timeIntervalSince1970: 1_790_000_000)
        let sent = MessageProperties(contentType: "application/json",
                                     headers: ["push-error-code": "INVALID_JOB", "push-attempts": 3,
                                               "push-replayed": true, "push-first-failed-at": .timestamp(stamp)],
                                     persistent: true, messageID: "job-42")
        let body = Data([0x00, 0xFF, 0x7B, 0x0A])  // not JSON, not UTF-8: kept byte for byte
        try await publisher.publish(exchange: "", routingKey: queue, body: body, properties: sent)
        await publisher.close()

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 10)
        let got = try #require(try await take(1, from: consumer).first)
        consumer.ack(got.deliveryTag)
        await consumer.close()
        #expect(got.body == body)
        #expect(got.properties == sent)
        #expect(got.routingKey == queue)
        #expect(got.exchange == "")
        #expect(!got.redelivered)
    }

    /// One batch whose publishes leave gathered in one write: a body spread over several frames,
    /// an empty body (no body frame), properties too large for the 4 KiB first try, and small
    /// ones. Each arrives byte for byte, in order, with its properties.
    /// Over TLS too: the gathered frames go through librabbitmq's SSL socket (decision 0090).
    @Test(arguments: [false, true])
    func aBatchOfLargeEmptyAndSmallPublishesArrivesByteForByte(overTLS: Bool) async throws {
        let broker = try await TestBroker.shared()
        let settings = try overTLS ? broker.tlsSettings() : broker.settings()
        let queue = broker.uniqueName("frames")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        var generator = SystemRandomNumberGenerator()
        let large = Data((0..<(3 * settings.frameMax + 17)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let bigHeaders = MessageProperties(headers: ["push-error-message": .string(String(repeating: "é", count: 3_000))],
                                           messageID: "big-headers")
        let batch: [ConfirmingPublisher.Outgoing] = [
            .init(exchange: "", routingKey: queue, body: large, properties: MessageProperties(messageID: "large")),
            .init(exchange: "", routingKey: queue, body: Data(), properties: MessageProperties(messageID: "empty")),
            .init(exchange: "", routingKey: queue, body: Data("{}".utf8), properties: bigHeaders),
        ] + (0..<20).map { .init(exchange: "", routingKey: queue, body: Data("small-\($0)".utf8)) }
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        let errors = await publisher.publish(batch: batch)
        await publisher.close()
        #expect(errors.allSatisfy { $0 == nil }, "\(errors.compactMap { $0 })")

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 50)
        let got = try await take(batch.count, from: consumer)
        for delivery in got { consumer.ack(delivery.deliveryTag) }
        await consumer.close()
        #expect(got.map(\.body) == batch.map(\.body))
        #expect(got.map(\.properties) == batch.map(\.properties))
    }

    @Test func nackWithRequeueRedeliversTheMessage() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("nack")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.publishConfirmed(exchange: "", routingKey: queue, body: Data("again".utf8))

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 1)
        let first = try #require(try await take(1, from: consumer).first)
        #expect(!first.redelivered)
        consumer.nack(first.deliveryTag, requeue: true)
        let second = try #require(try await take(1, from: consumer).first)
        #expect(second.redelivered)
        #expect(second.body == Data("again".utf8))
        consumer.ack(second.deliveryTag)
        await consumer.close()
        #expect(try client.messageCount(queue: queue) == 0)
    }

    @Test func consumerSurvivesIdleLongerThanTwoHeartbeats() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings(heartbeatSeconds: 1)
        let queue = broker.uniqueName("idle")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 1)
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        // Idle time is what this test is about: the broker drops a peer after two missed
        // heartbeats (2 s here); 5 s of silence must not cost either connection.
        try await Task.sleep(for: .seconds(5))
        try await withDeadline(10, "publish after idle") {
            try await publisher.publish(exchange: "", routingKey: queue, body: Data("awake".utf8))
        }
        let got = try #require(try await take(1, from: consumer).first)
        consumer.ack(got.deliveryTag)
        await consumer.close()
        await publisher.close()
        #expect(got.body == Data("awake".utf8))
    }

    @Test func cancelFinishesTheStreamWithoutErrorAndLetsAcksDrain() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("cancel")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        for i in 0..<3 { try client.publishConfirmed(exchange: "", routingKey: queue, body: Data("\(i)".utf8)) }

        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 10)
        let held = try await take(3, from: consumer)
        consumer.cancel()
        try await withDeadline(10, "stream end after cancel") {
            for try await _ in consumer.deliveries {}
        }
        for delivery in held { consumer.ack(delivery.deliveryTag) }
        await consumer.close()
        #expect(try client.messageCount(queue: queue) == 0)
    }

    @Test func deletingTheQueueEndsTheStreamWithConsumerCancelledByServer() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("deleted")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 10)
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.deleteQueue(queue)
        let error = await #expect(throws: AMQPError.self) {
            try await withDeadline(10, "server cancel") { for try await _ in consumer.deliveries {} }
        }
        #expect(error?.code == .consumerCancelledByServer)
        await consumer.close()
    }
}
