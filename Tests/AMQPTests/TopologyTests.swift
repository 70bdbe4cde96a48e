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

    @Test func eventsConsumerHasItsOwnQuorumQueueBoundToEveryResult() throws {
        let t = Topology(prefix: "p")
        #expect(t.eventsResultsQueue == "p.events.results")
        let queue = try #require(t.queues.first { $0.name == "p.events.results" })
        #expect(queue.arguments["x-queue-type"] == "quorum")
        #expect(t.bindings.contains { $0.queue == "p.events.results" && $0.exchange == "p.results" && $0.routingKey == "#" })
        #expect(t.bindings.contains { $0.queue == "p.results" && $0.exchange == "p.results" && $0.routingKey == "#" })
    }

    @Test func aResultReachesBothTheResultsQueueAndTheEventsConsumersQueue() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("topo"))
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        try client.publishConfirmed(exchange: topology.resultsExchange, routingKey: "shop.sent", body: Data("{}".utf8))
        #expect(try client.messageCount(queue: topology.resultsQueue) == 1)
        #expect(try client.messageCount(queue: topology.eventsResultsQueue) == 1)
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
        #expect(try client.messageCount(queue: topology.resultsQueue) == 1)
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
