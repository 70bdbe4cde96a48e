import AMQP
@testable import ConfigurationFiles
@testable import DeadLetterTools
import FCM
import Foundation
import PushCore
@testable import PushWorker
@testable import ServiceRuntime
import Testing
@testable import Connector

/// The `dlq` commands against the real broker (and, for the replay story, the real worker and
/// emulator).
@Suite(.serialized, .timeLimit(.minutes(3))) struct DlqIntegrationTests {
    /// Quorum queues put requeued messages at the back, and return a closed channel's unacked
    /// messages in no order: a pass must read everything and requeue in order. Pinned here.
    @Test func listingTwiceAndWithLimitKeepsTheQueueOrder() async throws {
        let f = try await PipelineFixture()
        let ids = (0..<100).map { "order-\($0)" }
        try f.seedDLQ(ids.map { deadLetter($0) })
        for arguments in [["--json"], ["--json", "--limit", "5"], ["--json", "--app-id", "nobody"], ["--json"]] {
            let (code, out, err) = await runCLI(["dlq", "list"] + arguments + f.cliBroker)
            #expect(code == 0, "\(err)")
            let listed = try listedJobIDs(out)
            if arguments == ["--json", "--limit", "5"] { #expect(listed == Array(ids.prefix(5)), "\(listed)") }
            if arguments == ["--json"] { #expect(listed == ids, "\(listed)") }
            if arguments == ["--json", "--app-id", "nobody"] { #expect(out == "") }  // JSON Lines: no header, no summary
        }
        // Text output with nothing matching: the header and the summary, exactly.
        let (code, out, _) = await runCLI(["dlq", "list", "--app-id", "nobody"] + f.cliBroker)
        #expect(code == 0)
        let header = "JOB_ID" + String(repeating: " ", count: 32) + "APP_ID" + String(repeating: " ", count: 12) + "CODE"
            + String(repeating: " ", count: 20) + "ATTEMPTS " + "REPLAYS " + "FIRST_FAILED" + String(repeating: " ", count: 9)
            + "LAST_FAILED" + String(repeating: " ", count: 10) + "RECIPIENTS"
        #expect(out == header + "\n0 shown, 0 matching, 100 in \(f.topology.deadLetterQueue)")
        #expect(jobIDs(try f.drain(f.topology.deadLetterQueue)) == ids)
    }

    @Test func filtersSelectExactlyTheMatchingJobsAndLeaveTheRestInOrder() async throws {
        let f = try await PipelineFixture()
        let seeded: [(body: Data, properties: MessageProperties)] = [
            deadLetter("a-old", app: "a", failedSecondsAgo: 3 * 86_400, campaign: "X"), deadLetter("b-new", app: "b"),
            deadLetter("a-auth", app: "a", code: "AUTH_FAILED"), deadLetter("a-new", app: "a", campaign: "X"),
            deadLetter("b-old", app: "b", failedSecondsAgo: 10 * 3600), deadLetter("a-2h", app: "a", failedSecondsAgo: 2 * 3600),
            (Data([0xFF, 0xFE, 0x00]), MessageProperties(headers: [DeadLetterHeader.code: "INVALID_JOB"])),
        ]
        try f.seedDLQ(seeded)
        let all = ["a-old", "b-new", "a-auth", "a-new", "b-old", "a-2h", "?"]
        func list(_ filters: [String]) async throws -> [String] {
            let (code, out, err) = await runCLI(["dlq", "list", "--json"] + filters + f.cliBroker)
            #expect(code == 0, "\(err)")
            return try listedJobIDs(out)
        }
        #expect(try await list([]) == all)
        #expect(try await list(["--app-id", "a"]) == ["a-old", "a-auth", "a-new", "a-2h"])
        #expect(try await list(["--app-id", "a", "--code", "UNKNOWN_APP"]) == ["a-old", "a-new", "a-2h"])
        #expect(try await list(["--code", "AUTH_FAILED", "--code", "INVALID_JOB"]) == ["a-auth", "?"])
        #expect(try await list(["--older-than", "1h"]) == ["a-old", "b-old", "a-2h"])
        #expect(try await list(["--newer-than", "1d", "--older-than", "90m"]) == ["b-old", "a-2h"])
        #expect(try await list(["--campaign", "X", "--job-id", "a-new"]) == ["a-new"])

        // --dry-run changes nothing.
        let (dryCode, dryOut, _) = await runCLI(["dlq", "replay", "--dry-run", "--app-id", "a", "--code", "UNKNOWN_APP"] + f.cliBroker)
        #expect(dryCode == 0)
        #expect(dryOut.hasPrefix("would replay 3 job(s)"), "\(dryOut)")
        #expect(try f.messageCount(f.topology.jobsQueue) == 0)
        #expect(try await list([]) == all)

        // The real replay moves exactly those, in order, with fresh attempt headers.
        let (code, out, err) = await runCLI(["dlq", "replay", "--app-id", "a", "--code", "UNKNOWN_APP"] + f.cliBroker)
        #expect(code == 0, "\(err)")
        #expect(out.hasPrefix("replayed 3 job(s) to \(f.topology.jobsExchange)/job"), "\(out)")
        let replayed = try f.drain(f.topology.jobsQueue)
        #expect(jobIDs(replayed) == ["a-old", "a-new", "a-2h"])
        for d in replayed {
            let h = d.properties.headers
            #expect(h[DeadLetterHeader.replays] == .int(1))
            #expect(h[DeadLetterHeader.retryAttempt] == nil && h[DeadLetterHeader.firstFailedAt] == nil && h[DeadLetterHeader.code] == nil)
            #expect(d.properties.contentType == "application/json" && d.properties.persistent)
        }
        #expect(replayed.map(\.body) == [seeded[0].body, seeded[3].body, seeded[5].body])

        // A filtered purge removes exactly the matching ones; the rest stays in order.
        #expect(await runCLI(["dlq", "purge", "--app-id", "b"] + f.cliBroker).0 == 2)  // no --yes
        let (purgeCode, purgeOut, _) = await runCLI(["dlq", "purge", "--yes", "--app-id", "b"] + f.cliBroker)
        #expect(purgeCode == 0)
        #expect(purgeOut == "deleted 2 message(s) from \(f.topology.deadLetterQueue)")
        #expect(jobIDs(try f.drain(f.topology.deadLetterQueue)) == ["a-auth", nil])
    }

    @Test func replayAfterFixingAnUnknownAppIDDeliversTheJob() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        try await f.publish([jobJSON("ios-1", tokens: ["dev-i1", "dev-i2"], app: "shop-ios"), jobJSON("ok-1", tokens: ["dev-ok"])])
        _ = try await f.results(3)  // ok-1 sent, ios-1's two recipients dead_lettered
        try await f.waitForCount(f.topology.deadLetterQueue, 1)
        shutdown.trigger()
        await task.value

        let (listCode, listOut, _) = await runCLI(["dlq", "list", "--json"] + f.cliBroker)
        #expect(listCode == 0)
        let listed = try JSONValue.parse(listOut)
        #expect(listed["job_id"] == "ios-1" && listed["app_id"] == "shop-ios" && listed["code"] == "UNKNOWN_APP")
        #expect(listed["recipients"] == .int(2) && listed["replays"] == .int(0))
        let (statsCode, statsOut, _) = await runCLI(["dlq", "stats", "--json"] + f.cliBroker)
        #expect(statsCode == 0)
        #expect(try JSONValue.parse(statsOut)["by_code"] == ["UNKNOWN_APP": 1])

        // The operator adds the App ID and restarts the worker, then replays.
        let fixed = f.directory + "/apps-fixed.json"
        try """
        {"apps":[{"app_id":"shop-android","project_id":"\(PipelineFixture.project)","credentials_file":"\(f.directory)/sa.json"},
                 {"app_id":"shop-ios","project_id":"\(PipelineFixture.project)","credentials_file":"\(f.directory)/sa.json"}]}
        """.write(toFile: fixed, atomically: true, encoding: .utf8)
        let (shutdown2, task2) = f.startWorker(try f.makeWorker(appsFile: fixed))
        let (code, out, err) = await runCLI(["dlq", "replay", "--app-id", "shop-ios"] + f.cliBroker)
        #expect(code == 0, "\(err)")
        #expect(out.hasPrefix("replayed 1 job(s)"))
        let results = try await f.results(2)
        shutdown2.trigger()
        await task2.value
        #expect(Set(results.map(\.target.value)) == ["dev-i1", "dev-i2"])
        #expect(results.allSatisfy { $0.jobID == "ios-1" && $0.outcome == .sent && $0.attempts == 1 })
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 0)
    }

    @Test func exportPurgeImportRoundTripsBodiesAndHeadersByteForByte() async throws {
        let f = try await PipelineFixture()
        let typed: AMQPTable = [
            DeadLetterHeader.code: "INVALID_JOB", DeadLetterHeader.attempts: 0, "flag": true, "ratio": .double(0.25),
            "when": .timestamp(Date(timeIntervalSince1970: 1_764_000_000)), "raw": .bytes(Data([0, 1, 0xFE])),
            "nested": .table(["list": .array([1, "x", .table(["deep": .double(-1.5)])])]),
        ]
        let seeded: [(body: Data, properties: MessageProperties)] = [
            deadLetter("rt-1", campaign: "Ünïcode ☕"),
            (Data([0xFF, 0x00, 0xC3, 0x28, 0x7B, 0x0A]), MessageProperties(contentType: "application/octet-stream", headers: typed,
                                                                           persistent: true, priority: 4, correlationID: "corr",
                                                                           messageID: "mid", timestamp: Date(timeIntervalSince1970: 1_764_000_001),
                                                                           type: "job", appID: "upstream")),
            (Data("{\"job_id\":\"rt-3\",\n  \"app_id\":\"x\", \"pad\":\"\\u00e9\"}".utf8), MessageProperties(headers: ["only": "one"], persistent: true)),
            (Data(), MessageProperties(persistent: true)),
        ]
        try f.seedDLQ(seeded)
        let file = try temporaryDirectory() + "/dlq.jsonl"
        let (exportCode, exportOut, exportErr) = await runCLI(["dlq", "export", file] + f.cliBroker)
        #expect(exportCode == 0, "\(exportErr)")
        #expect(exportOut.hasPrefix("exported 4 of 4 message(s)"))
        #expect(await runCLI(["dlq", "export", file] + f.cliBroker).0 == 2)  // never overwrites
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4)
        #expect(lines[1].contains(#""body_encoding":"base64""#) && lines[0].contains(#""body_encoding":"utf8""#))

        let (purgeCode, purgeOut, _) = await runCLI(["dlq", "purge", "--yes"] + f.cliBroker)
        #expect(purgeCode == 0)
        #expect(purgeOut == "deleted 4 message(s) from \(f.topology.deadLetterQueue)")
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 0)

        let (importCode, importOut, importErr) = await runCLI(["dlq", "import", file] + f.cliBroker)
        #expect(importCode == 0, "\(importErr)")
        #expect(importOut == "imported 4 message(s) into \(f.topology.deadLetterQueue), all confirmed")
        let back = try f.drain(f.topology.deadLetterQueue)
        #expect(back.count == seeded.count)
        for (got, want) in zip(back, seeded) {
            #expect(got.body == want.body)
            var properties = got.properties
            properties.headers.removeValue(forKey: "x-delivery-count")
            #expect(properties == want.properties)
        }
    }

    @Test func importChecksTheWholeFileFirst() async throws {
        let f = try await PipelineFixture()
        let file = try temporaryDirectory() + "/bad.jsonl"
        let good = DeadLetterRecord(body: Data("{}".utf8), properties: MessageProperties()).line
        try "\(good)\nnot json\n".write(toFile: file, atomically: true, encoding: .utf8)
        let (code, _, err) = await runCLI(["dlq", "import", file] + f.cliBroker)
        #expect(code == 2)
        #expect(err.contains("bad.jsonl:2:"))
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 0)
    }

    @Test func messagesRabbitMQDeadLetteredItselfShowAsDeliveryLimit() async throws {
        let f = try await PipelineFixture()
        // A job that keeps coming back (a worker that crashes holding it): the job queue's
        // x-delivery-limit (20) makes RabbitMQ dead-letter it itself, with x-death and no push-*
        // headers. Each holder's connection closes with the job unacked, as a crash would: every
        // line counts such a return (RabbitMQ 4.x no longer counts a nack with requeue).
        try await f.publish([jobJSON("looping", tokens: ["t"])])
        var deliveries = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while try f.messageCount(f.topology.deadLetterQueue) == 0, ContinuousClock.now < deadline {
            let client = try AMQPChannelClient(settings: f.settings)
            if try client.get(queue: f.topology.jobsQueue) != nil { deliveries += 1 } else { try await Task.sleep(for: .milliseconds(10)) }
            client.close()
        }
        #expect(deliveries > 20)
        let (code, out, _) = await runCLI(["dlq", "list", "--json", "--code", "DELIVERY_LIMIT"] + f.cliBroker)
        #expect(code == 0)
        #expect(try listedJobIDs(out) == ["looping"])
        let listed = try JSONValue.parse(out)
        #expect(listed["last_failed_at"]?.stringValue != nil && listed["replays"] == .int(0), "\(out)")
        let (statsCode, stats, _) = await runCLI(["dlq", "stats"] + f.cliBroker)
        #expect(statsCode == 0)
        #expect(stats.contains("DELIVERY_LIMIT"))
        #expect(await runCLI(["dlq", "replay", "--code", "DELIVERY_LIMIT"] + f.cliBroker).0 == 0)
        let replayed = try f.drain(f.topology.jobsQueue)
        #expect(jobIDs(replayed) == ["looping"])
        #expect(replayed.first?.properties.headers["x-death"] == nil)
        #expect(replayed.first?.properties.headers[DeadLetterHeader.replays] == .int(1))
    }

    @Test func jobsOverTheReplayLimitAreRefusedUnlessForced() async throws {
        let f = try await PipelineFixture()
        try f.seedDLQ([deadLetter("tired", replays: 5), deadLetter("fresh", replays: 4)])
        let (code, out, err) = await runCLI(["dlq", "replay"] + f.cliBroker)
        #expect(code == 1)
        #expect(out.hasPrefix("replayed 1 job(s)") && out.contains("1 refused"), "\(out)")
        #expect(err.contains("refused job tired"))
        #expect(jobIDs(try f.drain(f.topology.jobsQueue)) == ["fresh"])
        let (forcedCode, _, _) = await runCLI(["dlq", "replay", "--force", "--json"] + f.cliBroker)
        #expect(forcedCode == 0)
        let forced = try f.drain(f.topology.jobsQueue)
        #expect(jobIDs(forced) == ["tired"])
        #expect(forced.first?.properties.headers[DeadLetterHeader.replays] == .int(6))
    }

    @Test func replayToADestinationThatRoutesNowhereKeepsTheJob() async throws {
        let f = try await PipelineFixture()
        try f.seedDLQ([deadLetter("stay-1"), deadLetter("stay-2")])
        let client = try AMQPChannelClient(settings: f.settings)
        try client.declareExchange(f.topology.prefix + ".void", type: "direct")
        client.close()
        for to in [f.topology.prefix + ".void/job", f.topology.prefix + ".missing/job"] {
            let (code, out, err) = await runCLI(["dlq", "replay", "--to", to] + f.cliBroker)
            #expect(code == 1, "\(to): \(out)")
            #expect(err.contains("stopped after 0 replayed"), "\(err)")
        }
        #expect(await runCLI(["dlq", "replay", "--to", "nowhere"] + f.cliBroker).0 == 2)
        #expect(jobIDs(try f.drain(f.topology.deadLetterQueue)) == ["stay-1", "stay-2"])
    }

    @Test func commandsOnAMissingDLQFailInOneLine() async throws {
        let f = try await PipelineFixture()
        let (code, _, err) = await runCLI(["dlq", "stats", "--amqp-url", f.broker.url, "--prefix", f.topology.prefix + "-none"])
        #expect(code == 1)
        #expect(err.contains("does not exist") && !err.contains("\n"))
        #expect(await runCLI(["dlq", "list", "--older-than", "soon"] + f.cliBroker).0 == 2)
        #expect(await runCLI(["dlq", "replay", "--rate", "0"] + f.cliBroker).0 == 2)
    }
}

// MARK: - Helpers shared by the DLQ tests
/// Helpers for the DLQ tests: seed the DLQ directly, read queues in order, CLI arguments.
extension PipelineFixture {
    /// `--amqp-url … --prefix …` for the CLI.
    var cliBroker: [String] { ["--amqp-url", broker.url, "--prefix", topology.prefix] }

    /// Publishes messages straight into the DLQ, in order, with confirms.
    func seedDLQ(_ messages: [(body: Data, properties: MessageProperties)]) throws {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        for m in messages {
            try client.publishConfirmed(exchange: "", routingKey: topology.deadLetterQueue, body: m.body,
                                        properties: m.properties, mandatory: true)
        }
    }

    /// Takes (acks) every message of `queue`, in queue order.
    func drain(_ queue: String) throws -> [Delivery] {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        var taken: [Delivery] = []
        while let d = try client.get(queue: queue) {
            try client.ack(d.deliveryTag)
            taken.append(d)
        }
        return taken
    }

    /// Waits until `queue` holds `count` ready messages.
    func waitForCount(_ queue: String, _ count: Int, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while try messageCount(queue) != count {
            guard ContinuousClock.now < deadline else {
                throw FixtureError("\(queue) holds \(try messageCount(queue)) messages, not \(count), after \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// A worker like `makeWorker()`, but with another App ID file (the operator's fix).
    func makeWorker(appsFile path: String) throws -> SendWorker {
        let registry = try AppConfigurationFile.load(path)
        var fcm = FCMClient.Configuration()
        fcm.baseURL = emulator.baseURL
        fcm.transport.requestTimeout = .seconds(10)
        let sender = try FCMPushSender(client: FCMClient(configuration: fcm), registry: registry)
        var configuration = SendWorker.Configuration(settings: settings, topology: topology)
        configuration.reconnectBackoff = Backoff(initial: .milliseconds(100), max: .seconds(1))
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(1))
        let processor = JobProcessor(registry: registry, sender: sender, topology: topology, planner: JobPlanner(policy: policy))
        return SendWorker(configuration: configuration, processor: processor, logger: Logger(component: "test-worker", minimumLevel: .warning))
    }
}

/// A DLQ message as the worker writes it.
func deadLetter(_ id: String, app: String = "shop-android", code: String = "UNKNOWN_APP", failedSecondsAgo: Double = 60,
                replays: Int64 = 0, campaign: String? = nil) -> (body: Data, properties: MessageProperties) {
    let when = Timestamp(secondsSince1970: Date().timeIntervalSince1970 - failedSecondsAgo).description
    let extra = campaign.map { #","campaign":"\#($0)""# } ?? ""
    let headers: AMQPTable = [
        DeadLetterHeader.code: .string(code), DeadLetterHeader.message: "test failure", DeadLetterHeader.attempts: 1,
        DeadLetterHeader.firstFailedAt: .string(when), DeadLetterHeader.lastFailedAt: .string(when),
        DeadLetterHeader.replays: .int(replays), DeadLetterHeader.retryAttempt: 2,
    ]
    return (Data(jobJSON(id, tokens: ["dev-\(id)"], app: app, extra: extra).utf8),
            MessageProperties(contentType: "application/json", headers: headers, persistent: true))
}

/// Job ids of messages, in order (nil for bodies that are not jobs).
func jobIDs(_ deliveries: [Delivery]) -> [String?] {
    deliveries.map { DeadLetterEntry(body: $0.body, headers: $0.properties.headers).jobID }
}

/// Job ids printed by `dlq list --json`.
func listedJobIDs(_ out: String) throws -> [String] {
    try out.split(separator: "\n").map { try JSONValue.parse(String($0))["job_id"]?.stringValue ?? "?" }
}
