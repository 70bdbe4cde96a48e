import AMQP
import BrokerHarness
import Foundation
import Testing

@Suite("Topology", .timeLimit(.minutes(2)))
struct TopologyTests {
    @Test func namesEverythingFromThePrefixAndTiersFromTheDelays() {
        let t = Topology(prefix: "acme", retryDelaysSeconds: [30, 5, 120, 600, 3600, 5])
        #expect(t.jobsQueue == "acme.jobs")
        #expect(t.deadLetterQueue == "acme.jobs.dlq")
        #expect(t.retryTiers.map(\.name) == ["5s", "30s", "2m", "10m", "1h"])
        #expect(t.retryTiers.map(\.queue).first == "acme.retry.5s")
        #expect(t.retryTier(forDelaySeconds: 7)?.name == "30s")
        #expect(t.retryTier(forDelaySeconds: 99_999)?.name == "1h")
        #expect(t.retryTier(forDelaySeconds: 0)?.name == "5s")
    }

    @Test func jobQueueIsQuorumWithAtLeastOnceDeadLettering() throws {
        let t = Topology(prefix: "p", deliveryLimit: 7)
        let jobs = try #require(t.queues.first { $0.name == "p.jobs" })
        #expect(jobs.arguments["x-queue-type"] == "quorum")
        #expect(jobs.arguments["x-dead-letter-exchange"] == "p.dlx")
        #expect(jobs.arguments["x-dead-letter-strategy"] == "at-least-once")
        #expect(jobs.arguments["x-overflow"] == "reject-publish")
        #expect(jobs.arguments["x-delivery-limit"] == 7)
        let retry = try #require(t.queues.first { $0.name == "p.retry.2m" })
        #expect(retry.arguments["x-message-ttl"] == 120_000)
        #expect(retry.arguments["x-dead-letter-exchange"] == "p.jobs")
        #expect(retry.arguments["x-dead-letter-routing-key"] == .string(t.jobsRoutingKey))
    }

    @Test func resultsGoToOneStreamWithRetentionAndToNoQuorumQueue() throws {
        let t = Topology(prefix: "p", resultsRetention: .init(maxAge: "36h", maxBytes: 5_000_000_000, segmentBytes: 50_000_000))
        #expect(t.resultsStream == "p.results.stream")
        let stream = try #require(t.queues.first { $0.name == "p.results.stream" })
        #expect(stream.arguments == ["x-queue-type": "stream", "x-max-age": "36h", "x-max-length-bytes": 5_000_000_000,
                                     "x-stream-max-segment-size-bytes": 50_000_000])
        #expect(t.bindings.filter { $0.exchange == "p.results" }.map(\.queue) == ["p.results.stream"])
        #expect(t.bindings.first { $0.exchange == "p.results" }?.routingKey == "#")
        #expect(!t.queues.contains { $0.name == "p.results" || $0.name == "p.events.results" })
        #expect(t.legacyResultsQueues == ["p.results", "p.events.results"])
        let defaults = Topology(prefix: "p").resultsRetention
        #expect(defaults.maxAge == "7D" && defaults.maxBytes == 20_000_000_000 && defaults.segmentBytes == 100_000_000)
    }

    @Test(arguments: [("7D", true), ("36h", true), ("1Y", true), ("90s", true), ("0D", false), ("7d", false), ("D", false),
                      ("-1D", false), ("+7D", false), ("7", false), ("", false)])
    func maxAgeIsANumberAndOneRabbitMQUnit(_ text: String, _ valid: Bool) {
        #expect(Topology.ResultsRetention.isValidMaxAge(text) == valid)
    }

    /// The stream on the broker: its type and retention as RabbitMQ lists them, and a
    /// redeclaration as a quorum queue (what an earlier version's code would do) refused.
    @Test func theResultsStreamIsDeclaredWithItsRetention() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("topo"), resultsRetention: .init(maxAge: "2D", maxBytes: 3_000_000_000))
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        let listing = try broker.rabbitmqctl(["list_queues", "name", "type", "arguments"])
        let line = try #require(listing.split(separator: "\n").first { $0.hasPrefix("\(topology.resultsStream)\t") })
        #expect(line.contains("\tstream\t"), "\(line)")
        #expect(line.contains("x-max-age") && line.contains("2D"), "\(line)")
        #expect(line.contains("x-max-length-bytes") && line.contains("3000000000"), "\(line)")
        #expect(line.contains("x-stream-max-segment-size-bytes"), "\(line)")
        do {
            try client.declareQueue(topology.resultsStream, arguments: ["x-queue-type": "quorum"])
            Issue.record("a quorum queue of the stream's name was accepted")
        } catch {
            #expect(error.replyCode == 406)
        }
    }

    /// The dead-letter queues have no dead-letter exchange behind them: a message RabbitMQ drops
    /// for its delivery count is gone. On 4.x (default limit 20) they are declared with -1 (no
    /// limit); on 3.x (no default, and -1 would drop at the first return) without. Either way a
    /// dead letter returned 25 times by a dying reader is still there.
    @Test func aDeadLetterReturnedByDyingReadersIsNeverDroppedOnAnyLine() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("topo"))
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        let report = try topology.declare(on: client)
        #expect(report.keptWithout.isEmpty && report.notes.count == 1)
        let listing = try broker.rabbitmqctl(["list_queues", "name", "arguments"])
        let line = try #require(listing.split(separator: "\n").first { $0.hasPrefix("\(topology.deadLetterQueue)\t") })
        #expect(line.contains("x-delivery-limit") == client.brokerFeatures.unlimitedDeliveryLimit, "\(client.brokerFeatures): \(line)")
        try client.publishConfirmed(exchange: topology.deadLetterExchange, routingKey: "", body: Data("dead".utf8))
        for round in 1...25 {
            let reader = try AMQPChannelClient(settings: settings)
            let held = try reader.get(queue: topology.deadLetterQueue)
            reader.close()  // dies holding it: the broker returns it and counts a delivery
            try #require(held?.body == Data("dead".utf8), "round \(round) on \(client.brokerFeatures)")
        }
        var count = UInt32(0)
        for _ in 0..<40 where count == 0 {  // the last return lands a moment after the close
            count = try client.messageCount(queue: topology.deadLetterQueue)
            if count == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(count == 1)
    }

    /// A broker set up by an earlier version: the events queue and both dead-letter queues without
    /// `x-delivery-limit`. Declaring keeps them as they are and reports each (the worker logs a
    /// warning); a queue that differs in another argument is still refused.
    @Test func queuesDeclaredByAnEarlierVersionAreKeptAndReported() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("topo"))
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        let earlier = [topology.eventsQueue, topology.eventsDeadLetterQueue, topology.deadLetterQueue]
        for queue in topology.queues where earlier.contains(queue.name) {
            try client.declareQueue(queue.name, arguments: queue.earlierArguments(on: client.brokerFeatures))
        }
        let report = try topology.declare(on: client)
        let expected = client.brokerFeatures.unlimitedDeliveryLimit ? earlier : [topology.eventsQueue]  // 3.x: the DLQs match
        #expect(report.keptWithout == Dictionary(uniqueKeysWithValues: expected.map { ($0, ["x-delivery-limit"]) }))
        #expect(report.notes.count == 1 + expected.count && report.notes.dropFirst().allSatisfy { $0.contains("set it with a policy") })
        #expect(try topology.declare(on: client) == report, "declaring again finds the same")

        let other = Topology(prefix: topology.prefix, deliveryLimit: 7)
        do {
            try other.declare(on: client)
            Issue.record("a job queue with another delivery limit was accepted")
        } catch {
            #expect(error.replyCode == 406)
        }
    }

    /// Any number of readers, each from its own offset: two consumers from `first` both read
    /// every result, in order, with their offsets; neither takes anything from the other.
    @Test func twoIndependentReadersEachReadEveryResult() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("topo"))
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        let bodies = (0..<30).map { Data(#"{"n":\#($0)}"#.utf8) }
        for (n, body) in bodies.enumerated() {
            try client.publishConfirmed(exchange: topology.resultsExchange, routingKey: n % 2 == 0 ? "shop.sent" : "shop.invalid_token", body: body)
        }
        var readers: [AMQPConsumer] = []
        for _ in 0..<2 {
            readers.append(try await AMQPConsumer.start(settings: settings, queue: topology.resultsStream, prefetch: 7,
                                                        arguments: StreamOffset.first.consumerArguments))
        }
        for reader in readers {
            var read: [Delivery] = []
            for try await d in reader.deliveries {
                read.append(d)
                reader.ack(d.deliveryTag)  // credit: with prefetch 7, 30 arrive only if acks return it
                if read.count == bodies.count { break }
            }
            #expect(read.map(\.body) == bodies)
            #expect(read.map(\.streamOffset) == (0..<30).map { Int64($0) })
            #expect(read.map(\.routingKey).prefix(2) == ["shop.sent", "shop.invalid_token"])
        }
        for reader in readers { await reader.close() }

        // From an offset: the rest only.
        let late = try await AMQPConsumer.start(settings: settings, queue: topology.resultsStream, prefetch: 50,
                                                arguments: StreamOffset.offset(25).consumerArguments)
        var rest: [Int64] = []
        for try await d in late.deliveries {
            if let o = d.streamOffset, o >= 25 { rest.append(o) }  // a chunk may start before 25
            if d.body == bodies.last { break }
        }
        await late.close()
        #expect(rest == [25, 26, 27, 28, 29])
    }

    @Test func declaringTwiceIsIdempotentAndQueuesCarryTheirArguments() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("topo"))
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        try topology.declare(on: client)

        let listing = try broker.rabbitmqctl(["list_queues", "name", "type", "arguments"])
        let jobsLine = try #require(listing.split(separator: "\n").first { $0.hasPrefix("\(topology.jobsQueue)\t") })
        #expect(jobsLine.contains("quorum"))
        #expect(jobsLine.contains("x-delivery-limit"))
        #expect(jobsLine.contains("at-least-once"))
        #expect(jobsLine.contains("reject-publish"))
        #expect(jobsLine.contains(topology.deadLetterExchange))
        for tier in topology.retryTiers {
            #expect(listing.contains("\(tier.queue)\t"))
        }

        // Same name, different arguments: the broker refuses (406), and the client stays usable.
        do {
            try client.declareQueue(topology.jobsQueue, arguments: ["x-queue-type": "classic"])
            Issue.record("redeclaring with other arguments was accepted")
        } catch {
            #expect(error.code == .channelClosed)
            #expect(error.replyCode == 406)
        }
        #expect(try client.messageCount(queue: topology.jobsQueue) == 0)
    }

    @Test func aJobRoutedToTheJobExchangeLandsInTheJobQueue() async throws {
        let broker = try await TestBroker.shared()
        let topology = Topology(prefix: broker.uniqueName("route"))
        defer { try? broker.deleteTopology(topology, settings: try broker.settings()) }
        let client = try AMQPChannelClient(settings: try broker.settings())
        defer { client.close() }
        try topology.declare(on: client)
        try client.publishConfirmed(exchange: topology.jobsExchange, routingKey: topology.jobsRoutingKey,
                                    body: Data("{}".utf8))
        try client.publishConfirmed(exchange: topology.resultsExchange, routingKey: "shop.invalid_token",
                                    body: Data("{}".utf8))
        #expect(try client.messageCount(queue: topology.jobsQueue) == 1)
        let reader = try await AMQPConsumer.start(settings: try broker.settings(), queue: topology.resultsStream, prefetch: 10,
                                                  arguments: StreamOffset.first.consumerArguments)
        let result = try #require(try await take(1, from: reader).first)
        await reader.close()
        #expect(result.routingKey == "shop.invalid_token" && result.streamOffset == 0)
    }

    @Test func aRetryTierDelaysAJobAndDeadLettersItBackToTheJobQueue() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("retry"), retryDelaysSeconds: [1, 60])
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        let tier = try #require(topology.retryTier(forDelaySeconds: 0.5))
        #expect(tier.delaySeconds == 1)
        try client.publishConfirmed(exchange: topology.retryExchange, routingKey: tier.routingKey,
                                    body: Data("retry me".utf8),
                                    properties: MessageProperties(headers: ["push-attempts": 2]))
        #expect(try client.messageCount(queue: tier.queue) == 1)
        let back = try await pollUntil(seconds: 15) { try client.get(queue: topology.jobsQueue) }
        #expect(back.body == Data("retry me".utf8))
        #expect(back.properties.headers["push-attempts"] == 2)
        try client.ack(back.deliveryTag)
    }

    @Test func aRejectedJobIsDeadLetteredToTheDLQ() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("dlq"))
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        try client.publishConfirmed(exchange: topology.jobsExchange, routingKey: topology.jobsRoutingKey,
                                    body: Data("bad".utf8))
        let consumer = try await AMQPConsumer.start(settings: settings, queue: topology.jobsQueue, prefetch: 1)
        let job = try #require(try await take(1, from: consumer).first)
        consumer.reject(job.deliveryTag, requeue: false)
        await consumer.close()
        let dead = try await pollUntil(seconds: 15) { try client.get(queue: topology.deadLetterQueue) }
        #expect(dead.body == Data("bad".utf8))
        try client.ack(dead.deliveryTag)
    }
}

/// Polls `probe` every 50 ms until it returns a value, failing after `seconds`.
func pollUntil<T>(seconds: Double, _ probe: () throws -> T?) async throws -> T {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if let value = try probe() { return value }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw DeadlineExceeded(what: "condition not met within \(seconds) s")
}
