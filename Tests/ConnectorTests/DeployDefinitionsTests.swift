import Foundation
import PushCore
import Testing

/// deploy/rabbitmq-definitions.json read as an operator's broker would load it, with the
/// properties the delivery guarantees rest on written out literally (not compared with the
/// generator that wrote the file, which would pass whatever the generator does).
@Suite(.timeLimit(.minutes(1))) struct DeployDefinitionsTests {
    let definitions: JSONValue

    init() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: "\(repositoryRoot)/deploy/rabbitmq-definitions.json"))
        definitions = try JSONValue.parse(Array(bytes))
    }

    func queue(_ name: String) throws -> JSONValue {
        let queues = try #require(definitions["queues"]?.arrayValue)
        return try #require(queues.first { $0["name"] == .string(name) }, "no queue \(name)")
    }

    func arguments(_ name: String) throws -> JSONValue { try #require(try queue(name)["arguments"]) }

    func bindings(to queue: String) throws -> [(source: String, key: String)] {
        try #require(definitions["bindings"]?.arrayValue).filter { $0["destination"] == .string(queue) }.map {
            #expect($0["destination_type"] == "queue")
            return ($0["source"]?.stringValue ?? "?", $0["routing_key"]?.stringValue ?? "?")
        }
    }

    @Test func everyQueueIsADurableQuorumQueueButTheResultsStreamAndTheControlLog() throws {
        let queues = try #require(definitions["queues"]?.arrayValue)
        #expect(Set(queues.compactMap { $0["name"]?.stringValue }) == [
            "push.jobs", "push.jobs.high", "push.jobs.dlq", "push.results.stream", "push.control.log", "push.events", "push.events.dlq",
            "push.retry.5s", "push.retry.30s", "push.retry.2m", "push.retry.10m", "push.retry.1h",
            "push.retry.high.5s", "push.retry.high.30s", "push.retry.high.2m", "push.retry.high.10m", "push.retry.high.1h",
        ])
        for q in queues {
            let type: JSONValue = q["name"] == "push.results.stream" || q["name"] == "push.control.log" ? "stream" : "quorum"
            #expect(q["arguments"]?["x-queue-type"] == type, "\(q["name"] ?? .null)")
            #expect(q["durable"] == true && q["auto_delete"] == false, "\(q["name"] ?? .null)")
            #expect(q["vhost"] == "push", "the vhost of the deploy/ manifests")
        }
        #expect(definitions["vhosts"] == [["name": "push"]], "the import creates the vhost")
    }

    @Test func theJobQueueDeadLettersToTheDLXAtLeastOnceRefusesWhenFullAndLimitsDeliveries() throws {
        let a = try arguments("push.jobs")
        #expect(a["x-dead-letter-exchange"] == "push.dlx")
        #expect(a["x-dead-letter-routing-key"] == nil)
        #expect(a["x-dead-letter-strategy"] == "at-least-once")
        #expect(a["x-overflow"] == "reject-publish")
        #expect(a["x-delivery-limit"] == 20)
        #expect(try bindings(to: "push.jobs").map { "\($0.source) \($0.key)" } == ["push.jobs job"])
    }

    /// High-priority jobs: routing key `job.high` to their own queue, with the job queue's
    /// arguments; their retry ladder dead-letters back to it.
    @Test func urgentJobsHaveTheirQueueAndARetryLadderBackToIt() throws {
        #expect(try arguments("push.jobs.high") == arguments("push.jobs"))
        #expect(try bindings(to: "push.jobs.high").map { "\($0.source) \($0.key)" } == ["push.jobs job.high"])
        for tier in ["5s", "30s", "2m", "10m", "1h"] {
            let a = try arguments("push.retry.high.\(tier)")
            #expect(a["x-dead-letter-exchange"] == "push.jobs" && a["x-dead-letter-routing-key"] == "job.high")
            #expect(a["x-message-ttl"] == (try arguments("push.retry.\(tier)"))["x-message-ttl"])
            #expect(try bindings(to: "push.retry.high.\(tier)").map { "\($0.source) \($0.key)" } == ["push.retry high.\(tier)"])
        }
    }

    /// The file is for RabbitMQ 4.x (the deploy files run 4.3): the dead-letter queues lift 4.x's
    /// default delivery limit of 20 (nothing catches what they would drop), the events queue has
    /// the job queue's crash-loop guard.
    @Test func deadLetterQueuesHaveNoDeliveryLimitAndTheEventsQueueHasTheJobQueues() throws {
        #expect(try arguments("push.jobs.dlq")["x-delivery-limit"] == -1)
        #expect(try arguments("push.events.dlq")["x-delivery-limit"] == -1)
        #expect(try arguments("push.events")["x-delivery-limit"] == 20)
    }

    @Test(arguments: [("push.retry.5s", "5s", 5_000), ("push.retry.30s", "30s", 30_000), ("push.retry.2m", "2m", 120_000),
                      ("push.retry.10m", "10m", 600_000), ("push.retry.1h", "1h", 3_600_000)])
    func eachRetryTierHoldsForItsTTLThenDeadLettersBackToTheJobExchange(queue: String, key: String, ttl: Int) throws {
        let a = try arguments(queue)
        #expect(a["x-message-ttl"] == .int(Int64(ttl)))
        #expect(a["x-dead-letter-exchange"] == "push.jobs")
        #expect(a["x-dead-letter-routing-key"] == "job")
        #expect(a["x-dead-letter-strategy"] == "at-least-once")
        #expect(a["x-overflow"] == "reject-publish")
        #expect(try bindings(to: queue).map { "\($0.source) \($0.key)" } == ["push.retry \(key)"])
    }

    @Test func theDLQTakesEverythingTheDLXFansOutAndDeadLettersNowhere() throws {
        #expect(try bindings(to: "push.jobs.dlq").map { "\($0.source) \($0.key)" } == ["push.dlx "])
        #expect(try arguments("push.jobs.dlq")["x-dead-letter-exchange"] == nil)
        #expect(try arguments("push.jobs.dlq")["x-message-ttl"] == nil, "dead letters must never expire")
    }

    @Test func resultsGoToOneStreamBoundWithHashThatKeepsSevenDaysOrTwentyGigabytes() throws {
        #expect(try bindings(to: "push.results.stream").map { "\($0.source) \($0.key)" } == ["push.results #"])
        let bound = try #require(definitions["bindings"]?.arrayValue).filter { $0["source"] == "push.results" }
        #expect(bound.count == 1, "the stream is the only queue of the results exchange")
        let a = try arguments("push.results.stream")
        #expect(a["x-max-age"] == "7D")
        #expect(a["x-max-length-bytes"] == 20_000_000_000)
        #expect(a["x-stream-max-segment-size-bytes"] == 100_000_000)
        #expect(a["x-message-ttl"] == nil)
    }

    @Test func eventsDeadLetterThroughTheDefaultExchangeToTheirOwnDLQ() throws {
        let a = try arguments("push.events")
        #expect(a["x-dead-letter-exchange"] == "")
        #expect(a["x-dead-letter-routing-key"] == "push.events.dlq")
        #expect(a["x-dead-letter-strategy"] == "at-least-once")
        #expect(a["x-overflow"] == "reject-publish")
        #expect(try bindings(to: "push.events").map { "\($0.source) \($0.key)" } == ["push.events "])
        #expect(try bindings(to: "push.events.dlq").isEmpty, "reached through the default exchange only")
    }

    @Test func exchangesHaveTheTypesTheRoutingNeeds() throws {
        let exchanges = try #require(definitions["exchanges"]?.arrayValue)
        var types: [String: String] = [:]
        for e in exchanges {
            types[e["name"]?.stringValue ?? "?"] = e["type"]?.stringValue
            #expect(e["durable"] == true && e["auto_delete"] == false && e["internal"] == false)
        }
        #expect(types == ["push.jobs": "direct", "push.retry": "direct", "push.dlx": "fanout", "push.results": "topic",
                          "push.events": "fanout", "push.control": "fanout"])
    }
}
