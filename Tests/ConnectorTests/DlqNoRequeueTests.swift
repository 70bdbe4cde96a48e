import AMQP
import Foundation
import PushCore
import Testing
@testable import Connector

/// The DLQ passes never requeue: on RabbitMQ 4.x every requeue counts towards a quorum queue's
/// delivery limit (20 by default) and the DLQ has no dead-letter exchange, so a requeueing pass
/// would drop dead letters after ~20 runs. RabbitMQ 3.10 applies a `delivery-limit` policy the
/// same way: with a limit of 1, a message requeued twice is dropped.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DlqNoRequeueTests {
    @Test func passesUnderADeliveryLimitOfOneLoseNothingAndKeepOrderAndBytes() async throws {
        let f = try await PipelineFixture()
        let ids = (0..<12).map { "limit-\($0)" }
        var seeded = ids.map { deadLetter($0) }
        seeded.removeLast()
        try f.seedDLQ(Array(seeded.prefix(6)))
        // One message whose properties are written by hand in AMQP wire format: headers in an
        // unsorted order, narrow integer types, and an x-death entry, all of which must survive.
        let crafted = Self.handEncodedProperties()
        let craftedBody = Data(jobJSON("limit-crafted", tokens: ["t"]).utf8)
        try Self.publishRaw(f, body: craftedBody, encodedProperties: crafted, queue: f.topology.deadLetterQueue)
        // The same message in a fresh quorum queue, read once: what a never-touched copy looks
        // like when delivered (RabbitMQ 3.x adds x-delivery-count to every delivery, 4.x only
        // to one delivered before).
        let reference = try Self.deliveredOnce(f, body: craftedBody, encodedProperties: crafted)
        #expect(reference.count >= crafted.count)
        try f.seedDLQ(Array(seeded.suffix(5)))
        let expected = Array(ids.prefix(6)) + ["limit-crafted"] + Array(ids.prefix(11).suffix(5))

        let policy = f.topology.prefix + "-limit1"
        let pattern = "^" + NSRegularExpression.escapedPattern(for: f.topology.deadLetterQueue) + "$"
        try f.broker.rabbitmqctl(["set_policy", "-p", f.settings.vhost, "--apply-to", "queues", policy, pattern, #"{"delivery-limit":1}"#])
        defer { _ = try? f.broker.rabbitmqctl(["clear_policy", "-p", f.settings.vhost, policy]) }
        try await Self.waitForPolicy(f, policy)

        for run in 1...5 {
            let (code, out, err) = await runCLI(["dlq", "list", "--json"] + f.cliBroker)
            #expect(code == 0, "\(err)")
            #expect(try listedJobIDs(out) == expected, "run \(run)")
        }
        let file = try temporaryDirectory() + "/x.jsonl"
        for arguments in [["dlq", "stats"], ["dlq", "export", file], ["dlq", "replay", "--dry-run"], ["dlq", "purge", "--yes", "--job-id", "none"]] {
            let (code, _, err) = await runCLI(arguments + f.cliBroker)
            #expect(code == 0, "\(arguments): \(err)")
        }
        let left = try f.drain(f.topology.deadLetterQueue)
        #expect(jobIDs(left) == expected)
        let copy = try #require(left.first { $0.body == craftedBody })
        #expect(copy.encodedProperties == reference, "properties changed: \(copy.properties)")
        #expect(copy.properties.headers["x-death"] != nil && copy.properties.messageID == "msg-1")
        for (got, want) in zip(left.filter { $0.body != craftedBody }, seeded) {
            var properties = got.properties
            properties.headers.removeValue(forKey: "x-delivery-count")
            #expect(got.body == want.body && properties == want.properties)
        }
    }

    /// AMQP 0-9-1 basic properties, encoded here independently of the code under test:
    /// content-type, headers, delivery-mode, message-id, timestamp, type, app-id.
    static func handEncodedProperties() -> Data {
        func short(_ s: String) -> [UInt8] { [UInt8(s.utf8.count)] + Array(s.utf8) }
        func long(_ bytes: [UInt8]) -> [UInt8] { withUnsafeBytes(of: UInt32(bytes.count).bigEndian, Array.init) + bytes }
        func be<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.bigEndian, Array.init) }
        let death = short("reason") + [UInt8(ascii: "S")] + long(Array("delivery_limit".utf8))
            + short("queue") + [UInt8(ascii: "S")] + long(Array("shop.jobs".utf8))
            + short("count") + [UInt8(ascii: "l")] + be(Int64(1))
            + short("time") + [UInt8(ascii: "T")] + be(UInt64(1_764_000_000))
        let deaths = [UInt8(ascii: "F")] + long(death)
        let headers = short("zz-first") + [UInt8(ascii: "b")] + [0xFB]  // int8 -5
            + short(DeadLetterHeader.code) + [UInt8(ascii: "S")] + long(Array("UNKNOWN_APP".utf8))
            + short("aa-int32") + [UInt8(ascii: "I")] + be(Int32(70_000))
            + short("x-death") + [UInt8(ascii: "A")] + long(deaths)
        // Flags: content-type (15), headers (13), delivery-mode (12), message-id (7),
        // timestamp (6), type (5), app-id (3).
        let flags: UInt16 = 1 << 15 | 1 << 13 | 1 << 12 | 1 << 7 | 1 << 6 | 1 << 5 | 1 << 3
        let bytes = be(flags) + short("application/json") + long(headers) + [2] + short("msg-1")
            + be(UInt64(1_764_000_123)) + short("job") + short("crm")
        return Data(bytes)
    }

    static func publishRaw(_ f: PipelineFixture, body: Data, encodedProperties: Data, queue: String) throws {
        let client = try AMQPChannelClient(settings: f.settings)
        defer { client.close() }
        let message = Delivery(body: body, properties: MessageProperties(), deliveryTag: 0, encodedProperties: encodedProperties)
        try client.publishCopiesConfirmed([message], exchange: "", routingKey: queue)
    }

    /// The properties, as delivered, of the message published into a fresh quorum queue.
    static func deliveredOnce(_ f: PipelineFixture, body: Data, encodedProperties: Data) throws -> Data {
        let queue = f.topology.prefix + ".reference"
        let client = try AMQPChannelClient(settings: f.settings)
        defer { client.close() }
        try client.declareQueue(queue, arguments: ["x-queue-type": "quorum"])
        defer { _ = try? client.deleteQueue(queue) }
        try publishRaw(f, body: body, encodedProperties: encodedProperties, queue: queue)
        let delivery = try #require(try client.get(queue: queue))
        try client.ack(delivery.deliveryTag)
        return try #require(delivery.encodedProperties)
    }

    /// Waits until the broker applies `policy` to the DLQ.
    static func waitForPolicy(_ f: PipelineFixture, _ policy: String) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try !f.broker.rabbitmqctl(["list_queues", "-p", f.settings.vhost, "name", "policy"])
            .split(separator: "\n").contains(where: { $0.hasPrefix(f.topology.deadLetterQueue + "\t") && $0.hasSuffix(policy) }) {
            guard ContinuousClock.now < deadline else { throw FixtureError("policy \(policy) not applied") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
