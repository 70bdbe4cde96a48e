import AMQP
import BrokerHarness
import Foundation
import PushCore
import Testing
@testable import Connector

/// The results stream from the operator's side: `push-connector results` reading it with
/// offsets and filters, and the migration of an earlier version's quorum results queues.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ResultsStreamTests {
    @Test(arguments: [("first", StreamOffset.first), ("last", .last), ("next", .next), ("0", .offset(0)), ("1234", .offset(1234)),
                      ("@1764489600", .timestamp(Date(timeIntervalSince1970: 1_764_489_600))),
                      ("2025-11-30T08:00:00Z", .timestamp(Date(timeIntervalSince1970: 1_764_489_600)))])
    func fromNamesAPositionAnOffsetOrAnInstant(_ text: String, _ offset: StreamOffset) throws {
        #expect(try ResultsQuery.offset(text, command: "results") == offset)
    }

    @Test(arguments: ["-1", "firstt", "@x", "2026-13-40", "", "1.5"])
    func aBadFromIsOneLineAndExit2(_ text: String) async {
        let (code, _, err) = await runCLI(["results", "--from", text])
        #expect(code == 2)
        #expect(err.contains("--from must be first, last, next") && !err.contains("\n"), "\(err)")
    }

    @Test func badRetentionOptionsAreOneLineAndExit2() async {
        var (code, _, err) = await runCLI(["topology", "definitions", "--results-max-age", "7 days"])
        #expect(code == 2 && err.contains("--results-max-age"), "\(err)")
        (code, _, err) = await runCLI(["topology", "definitions", "--results-max-bytes", "12"])
        #expect(code == 2 && err.contains("--results-max-bytes"), "\(err)")
        (code, _, err) = await runCLI(["results", "--count", "0"])
        #expect(code == 2 && err.contains("--count"), "\(err)")
    }

    /// Publishes `SendResult`s to the results exchange (confirmed) and returns their bodies.
    func publishResults(_ f: PipelineFixture, _ specs: [(job: String, app: String, outcome: SendOutcome)]) throws -> [String] {
        let client = try AMQPChannelClient(settings: f.settings)
        defer { client.close() }
        return try specs.enumerated().map { n, spec in
            let r = SendResult(jobID: spec.job, appID: spec.app, mnMessageID: "mnid2m.9.\(n).1.1.1", campaign: nil, target: ("token", "dev-\(n)"),
                               outcome: spec.outcome, attempts: 1, completedAt: Timestamp(secondsSince1970: 1_764_500_000))
            let body = r.encoded().encodedString()
            try client.publishConfirmed(exchange: f.topology.resultsExchange, routingKey: r.routingKey, body: Data(body.utf8))
            return body
        }
    }

    @Test func resultsPrintsJSONLinesFromAnOffsetWithFiltersAndTakesNothingAway() async throws {
        let f = try await PipelineFixture()
        let bodies = try publishResults(f, [("j1", "shop-android", .sent), ("j1", "shop-android", .invalidToken), ("j2", "shop-ios", .sent),
                                            ("j2", "shop-android", .sent), ("j3", "shop-android", .sent)])
        let common = ["--amqp-url", f.broker.url, "--prefix", f.topology.prefix, "--timeout", "2"]
        var (code, out, err) = await runCLI(["results", "--count", "5"] + common)
        #expect(code == 0, "\(err)")
        #expect(out.split(separator: "\n").map(String.init) == bodies, "JSON Lines when standard output is not a terminal")

        (code, out, err) = await runCLI(["results", "--app-id", "shop-android", "--outcome", "sent", "--from", "1", "--count", "2"] + common)
        #expect(code == 0, "\(err)")
        #expect(out.split(separator: "\n").map(String.init) == [bodies[3], bodies[4]])

        (code, out, err) = await runCLI(["results", "--job-id", "j1"] + common)
        #expect(code == 0, "\(err)")
        #expect(out.split(separator: "\n").map(String.init) == [bodies[0], bodies[1]], "read again: a reader takes nothing away")

        (code, out, err) = await runCLI(["results", "--job-id", "j9", "--count", "1"] + common)
        #expect(code == 1 && out.isEmpty)
        #expect(err.contains("0 of 1 result(s)"), "\(err)")
    }

    /// Results carry their App ID as the stream's filter value. On RabbitMQ 3.13+ `results
    /// --app-id` asks the broker to skip the chunks of other App IDs and reads a few messages; on
    /// 3.10 it reads every result and filters them itself. It prints the same results on both.
    @Test func resultsOfOneAppIDAreFilteredByTheBrokerWhereItCanAndByTheReaderElsewhere() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        try await f.publish((0..<200).map { jobJSON("other-\($0)", tokens: ["dev-\($0)"], app: "other-app") })  // unknown: dead-lettered
        let others = try await f.results(200)
        try await f.publish((0..<3).map { jobJSON("mine-\($0)", tokens: ["dev-\($0)"]) })
        let mine = try await f.results(3)
        shutdown.trigger()
        await task.value
        #expect(others.allSatisfy { $0.appID == "other-app" } && mine.allSatisfy { $0.appID == "shop-android" && $0.outcome == .sent })

        let (code, out, err) = await runCLI(["results", "--app-id", "shop-android", "--summary", "--timeout", "2",
                                             "--amqp-url", f.broker.url, "--prefix", f.topology.prefix])
        #expect(code == 0, "\(err)")
        #expect(Set(try out.split(separator: "\n").map { try SendResult.decode(JSONValue.parse(Array($0.utf8))).jobID }) == ["mine-0", "mine-1", "mine-2"])
        let client = try AMQPChannelClient(settings: f.settings)
        let features = client.brokerFeatures
        client.close()
        let read = try #require(err.firstMatch(of: /read (\d+), printed 3/).flatMap { Int($0.1) }, "\(err)")
        if features.streamFiltering {
            #expect(read < 50 && err.contains("the broker filtered by --app-id"), "\(features): \(err)")
        } else {
            #expect(read == 203 && err.contains("every result read"), "\(features): \(err)")
        }
    }

    @Test func theTextLineNamesOffsetAppOutcomeJobAndErrorCode() throws {
        let json = try JSONValue.parse(#"{"job_id":"j","app_id":"a","mn_message_id":"m","target":{"token":"t"},"outcome":"invalid_token","error":{"code":"UNREGISTERED","message":"x"},"attempts":1,"completed_at":"2026-11-30T08:00:00Z"}"#)
        #expect(ResultsQuery.text(json, offset: 42) == "42  2026-11-30T08:00:00Z  a  invalid_token  job=j  m  token=t  UNREGISTERED")
    }

    /// A broker set up by an earlier version: quorum `<prefix>.results` and `.events.results`
    /// bound `#`, holding results. `topology declare` says what to do (exit 1); the migration
    /// moves every result into the stream in order, byte for byte, and deletes both queues;
    /// a second run has nothing to do.
    @Test func aBrokerHoldingTheOldQuorumResultsQueueMigratesWithNothingLost() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let topology = Topology(prefix: broker.uniqueName("mig"), retryDelaysSeconds: [1])
        defer { try? broker.deleteTopology(topology, settings: settings) }
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.declareExchange(topology.resultsExchange, type: "topic")
        for queue in topology.legacyResultsQueues {
            try client.declareQueue(queue, arguments: ["x-queue-type": "quorum"])
            try client.bindQueue(queue, exchange: topology.resultsExchange, routingKey: "#")
        }
        let old = (0..<70).map { n in (key: n % 3 == 0 ? "shop.invalid_token" : "shop.sent", body: Data(#"{"job_id":"old-\#(n)"}"#.utf8)) }
        for (n, message) in old.enumerated() {
            try client.publishConfirmed(exchange: topology.resultsExchange, routingKey: message.key, body: message.body,
                                        properties: MessageProperties(contentType: "application/json", headers: ["n": .int(Int64(n))]))
        }
        let common = ["--amqp-url", broker.url, "--prefix", topology.prefix, "--retry-tiers", "1"]

        let (code, _, err) = await runCLI(["topology", "declare"] + common)
        #expect(code == 1)
        #expect(err.contains("\(topology.prefix).results (70 message(s))") && err.contains("topology migrate-results --prefix \(topology.prefix)"), "\(err)")
        #expect(!err.contains("\n"))

        let (migrated, out, migrationLog) = await runCLI(["topology", "migrate-results"] + common)
        #expect(migrated == 0, "\(migrationLog)")
        #expect(out.contains("migrated: 70 from \(topology.prefix).results"), "\(out)")
        for queue in topology.legacyResultsQueues {
            #expect(throws: AMQPError.self, "\(queue) deleted") { try client.messageCount(queue: queue) }
        }
        let reader = try await StreamReader(settings: settings, stream: topology.resultsStream, from: .first)
        var moved: [Delivery] = []
        while moved.count < old.count, let d = try await reader.next(within: .seconds(10)) { moved.append(d) }
        let extra = try await reader.next(within: .milliseconds(300))
        await reader.close()
        #expect(moved.map(\.body) == old.map(\.body), "every result, in order")
        #expect(moved.map(\.routingKey) == old.map(\.key), "routing keys kept")
        #expect(moved.map { $0.properties.headers["n"] } == (0..<70).map { .int(Int64($0)) })
        #expect(moved.allSatisfy { $0.properties.contentType == "application/json" && $0.properties.persistent })
        #expect(extra == nil, "no result twice: \(extra.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")

        let again = await runCLI(["topology", "migrate-results"] + common)
        #expect(again.0 == 0 && again.1.contains("nothing to migrate"), "\(again)")
        #expect(await runCLI(["topology", "declare"] + common).0 == 0)
    }
}
