import AMQP
@testable import EventStorage
import Foundation
import PushCore
import Testing
@testable import Connector

/// A result for every recipient: a dead-lettered job publishes one `dead_lettered` result per
/// recipient, the events consumer stores them and the funnel counts them; once the job is
/// replayed and sent, the same recipients count as sent. Real broker, worker, events consumer.
@Suite(.serialized, .timeLimit(.minutes(2))) struct DeadLetteredResultsTests {
    @Test func aDeadLetteredJobWithThreeRecipientsGivesThreeResultsThatTheFunnelCountsUntilTheReplaySendsThem() async throws {
        let f = try await PipelineFixture()
        let db = f.directory + "/events.db"
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: db, http: false)
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        let tokens = ["dev-d1", "dev-d2", "dev-d3"]
        try await f.publish([jobJSON("dl-3", tokens: tokens, app: "shop-ios", extra: #","campaign":"C-DL""#)])
        let results = try await f.results(3)
        try await f.waitForCount(f.topology.deadLetterQueue, 1)
        shutdown.trigger()
        await task.value

        #expect(results.map(\.target.value).sorted() == tokens)
        #expect(results.allSatisfy { $0.outcome == .deadLettered && $0.jobID == "dl-3" && $0.appID == "shop-ios" && $0.campaign == "C-DL" })
        #expect(results.allSatisfy { $0.error?.code == "UNKNOWN_APP" && $0.error?.message.contains("unknown App ID \"shop-ios\"") == true })
        #expect(results.allSatisfy { $0.attempts == 0 && $0.replays == 0 && $0.routingKey == "shop-ios.dead_lettered" })
        #expect(Set(results.map(\.mnMessageID)) == Set((0..<3).map { MessageID.generate(jobID: "dl-3", index: $0) }))

        try await eventually("3 results stored") { events.service.metrics.sendsStored.value == 3 }
        var funnel = try FunnelQuery.run(path: db, scope: .job("dl-3"))
        #expect(funnel.recipients == 3 && funnel.deadLettered == 3 && funnel.sent == 0, "\(funnel)")
        let (code, text, err) = await runCLI(["stats", "--db", db, "--campaign", "C-DL"])
        #expect(code == 0, "\(err)")
        #expect(text.contains("\ndead-lettered    3\n") && !text.contains("unknown"), "\(text)")

        // The operator adds the App ID and replays: the same recipients now count as sent.
        let fixed = f.directory + "/apps-fixed.json"
        try """
        {"apps":[{"app_id":"shop-ios","project_id":"\(PipelineFixture.project)","credentials_file":"\(f.directory)/sa.json"}]}
        """.write(toFile: fixed, atomically: true, encoding: .utf8)
        let (shutdown2, task2) = f.startWorker(try f.makeWorker(appsFile: fixed))
        let (replayCode, _, replayErr) = await runCLI(["dlq", "replay"] + f.cliBroker)
        #expect(replayCode == 0, "\(replayErr)")
        let sent = try await f.results(3)
        shutdown2.trigger()
        await task2.value
        #expect(sent.allSatisfy { $0.outcome == .sent && $0.replays == 1 })
        #expect(Set(sent.map(\.mnMessageID)) == Set(results.map(\.mnMessageID)))

        try await eventually("the sent results stored") { events.service.metrics.sendsStored.value == 6 }
        await events.stop()
        funnel = try FunnelQuery.run(path: db, scope: .job("dl-3"))
        #expect(funnel.recipients == 3 && funnel.sent == 3 && funnel.deadLettered == 0, "\(funnel)")
    }
}
