import AMQP
import EmulatorKit
import Foundation
import PushCore
import Testing
@testable import Connector

/// High-priority jobs (`"priority": "high"`, routing key `job.high`) on the `worker` binary: they
/// go to their own queue, which an urgent lane with FCM capacity of its own consumes, so a
/// campaign backlog that fills the lanes' window never delays them; their retries and dead
/// letters stay urgent.
@Suite(.serialized, .timeLimit(.minutes(4))) struct UrgentJobTests {
    /// A campaign of 20 jobs × 20 recipients whose sends each take 3 s, through a window of 4:
    /// about 300 s of backlog, the window always full. An urgent job sent with `send --priority
    /// high` reaches FCM within 2 s (sharing the window it would wait 3 s for a permit), and one
    /// whose first attempt fails comes back from the urgent retry ladder as fast.
    @Test func anUrgentJobOvertakesACampaignThatFillsTheWindow() async throws {
        let f = try await PipelineFixture()
        try await f.publish((0..<20).map { j in
            jobJSON("campaign-\(j)", tokens: (0..<20).map { "slow3000-\(j)-\($0)" }, extra: #","campaign":"C""#)
        })
        let worker = try WorkerProcess(f, ["--max-in-flight", "4", "--urgent-in-flight", "4", "--max-attempts", "3",
                                           "--retry-base-delay", "1", "--shutdown-deadline", "1", "--log-level", "warn"])
        defer { _ = worker }
        try await waitUntil(timeout: .seconds(20), "the campaign fills the window") { f.emulator.recordedMessages().count >= 4 }

        let file = f.directory + "/urgent.jsonl"
        try (jobJSON("otp", tokens: ["urgent-otp"]) + "\n" + jobJSON("otp-flaky", tokens: ["flaky1-urgent"]) + "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let published = ContinuousClock.now
        let (code, out, err) = await runCLI(["send", "--priority", "high", "--amqp-url", f.vhostURL, "--prefix", f.topology.prefix, file])
        #expect(code == 0 && out.contains("(2 high priority)"), "\(out) \(err)")
        func received(_ token: String) -> Bool { f.emulator.recordedMessages().contains { $0.token == token } }
        try await waitUntil(timeout: .seconds(2), "the urgent job reaches FCM within 2 s") { received("urgent-otp") }
        let first = ContinuousClock.now - published
        try await waitUntil(timeout: .seconds(4), "the retried urgent job comes back from the urgent ladder") { received("flaky1-urgent") }
        let campaignSent = f.emulator.recordedMessages().count { $0.token?.hasPrefix("slow3000-") == true }
        #expect(campaignSent < 100, "the campaign was still draining (\(campaignSent) of 400 sent); urgent after \(first)")
        let results = try await f.results(2, timeout: .seconds(10)).filter { $0.jobID.hasPrefix("otp") }
        #expect(Set(results.map(\.jobID)) == ["otp", "otp-flaky"] && results.allSatisfy { $0.outcome == .sent })
        #expect(results.first { $0.jobID == "otp-flaky" }?.attempts == 2)
        _ = try await worker.terminate(within: .seconds(15))
    }

    /// A project paced by its `rate_limit_per_minute` (10 a second) with 300 campaign jobs queued:
    /// its sends wait in the project's pacing line, about 30 s of it. An urgent job of the same
    /// project takes the next turn ahead of that line (as debt the line repays), so it reaches
    /// FCM within a second, and the project's rate still holds.
    @Test func anUrgentJobOfAPacedProjectTakesTheNextTurnAheadOfItsBacklog() async throws {
        let perMinute = 600
        let f = try await PipelineFixture(retryTiers: [5, 30, 120])
        try f.setRateLimit(perMinute: perMinute)
        try await f.publish((0..<300).map { jobJSON("paced-\($0)", tokens: ["paced-\($0)"], extra: #","campaign":"C""#) })
        let worker = try WorkerProcess(f, ["--shutdown-deadline", "1", "--log-level", "warn"])
        defer { _ = worker }
        let start = ContinuousClock.now
        try await waitUntil(timeout: .seconds(20), "the campaign is being paced") { f.emulator.recordedMessages().count >= 30 }

        let file = f.directory + "/urgent.json"
        try jobJSON("otp", tokens: ["urgent-otp"]).write(toFile: file, atomically: true, encoding: .utf8)
        let (code, _, err) = await runCLI(["send", "--priority", "high", "--amqp-url", f.vhostURL, "--prefix", f.topology.prefix, file])
        #expect(code == 0, "\(err)")
        let published = ContinuousClock.now
        try await waitUntil(timeout: .seconds(1), "the urgent job reaches FCM within 1 s") {
            f.emulator.recordedMessages().contains { $0.token == "urgent-otp" }
        }
        let campaignSent = f.emulator.recordedMessages().count { $0.token?.hasPrefix("paced-") == true }
        #expect(campaignSent < 200, "the campaign was still paced (\(campaignSent) of 300 sent) when the urgent job went")
        let elapsed = (published - start) / .seconds(1) + 1
        let allowed = Double(perMinute) / 60 * elapsed + 20 + 1 + 2  // the rate, one burst, the urgent turn, rounding
        #expect(Double(f.emulator.recordedMessages().count) <= allowed, "the project's rate was not kept")
        _ = try await worker.terminate(within: .seconds(15))
    }

    /// An urgent job that exhausts its attempts is dead-lettered with `push-priority: high`, and
    /// `dlq replay` puts it back on the urgent queue, not behind the campaigns.
    @Test func anUrgentDeadLetterReplaysToTheUrgentQueue() async throws {
        let f = try await PipelineFixture()
        let worker = try WorkerProcess(f, ["--max-attempts", "2", "--retry-base-delay", "1", "--log-level", "warn"])
        defer { _ = worker }
        let file = f.directory + "/urgent.json"
        try jobJSON("otp-dead", tokens: ["unavailable-otp"]).write(toFile: file, atomically: true, encoding: .utf8)
        let common = ["--amqp-url", f.vhostURL, "--prefix", f.topology.prefix]
        var (code, _, err) = await runCLI(["send", "--priority", "high", "--amqp-url", f.vhostURL, "--prefix", f.topology.prefix, file])
        #expect(code == 0, "\(err)")
        let dead = try await f.results(1, timeout: .seconds(20))
        #expect(dead.first?.outcome == .deadLettered && dead.first?.attempts == 2)
        _ = try await worker.terminate(within: .seconds(15))
        try await waitUntil(timeout: .seconds(5), "the dead letter is in the DLQ") { (try? f.messageCount(f.topology.deadLetterQueue)) == 1 }

        (code, _, err) = await runCLI(["dlq", "replay"] + common)
        #expect(code == 0, "\(err)")
        try await waitUntil(timeout: .seconds(5), "the replayed job is on the urgent queue") {
            (try? f.messageCount(f.topology.urgentJobsQueue)) == 1
        }
        #expect(try f.messageCount(f.topology.jobsQueue) == 0)
        let replayed = try await f.take(1, from: f.topology.urgentJobsQueue)
        #expect(try SendJob.decode(Array(replayed[0].body)).priority == .high)
    }
}

/// Polls `condition` every 20 ms until it holds; throws with `what` after `timeout`.
func waitUntil(timeout: Duration, _ what: String, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw FixtureError("not within \(timeout): \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
