import BrokerHarness
import EmulatorKit
import Foundation
import Glibc
import PushCore
import Testing

/// One slow tenant does not hold the others (issue 52, finding 2): a project whose token
/// endpoint hangs keeps a bounded share of the send window, its other jobs go to a retry tier
/// (acked, no attempt used), and another project's jobs queued behind its backlog are sent at
/// their usual latency. The shipped binary, a real broker, the real emulator; the hung token
/// endpoint is a port that never answers.
@Suite(.serialized, .timeLimit(.minutes(3))) struct SlowProjectTests {
    @Test func jobsQueuedBehindAHungProjectsBacklogAreSentWithinSeconds() async throws {
        let f = try await PipelineFixture(retryTiers: [5, 30])
        let hung = try SilentPort()
        defer { hung.close() }
        let account = try ServiceAccountFactory.make(projectID: "slow-prod", clientEmail: ServiceAccountFactory.defaultClientEmail(projectID: "slow-prod"),
                                                     tokenURI: "http://127.0.0.1:\(hung.port)/token")
        try account.write(toFile: f.directory + "/slow.json", atomically: true, encoding: .utf8)
        let fine = try String(contentsOfFile: f.appsFile, encoding: .utf8)
        try fine.replacingOccurrences(of: #"{"apps":["#, with: #"{"apps":[{"app_id":"slow-android","project_id":"slow-prod","credentials_file":"\#(f.directory)/slow.json"},"#)
            .write(toFile: f.appsFile, atomically: true, encoding: .utf8)
        let worker = try WorkerProcess(f, ["--lanes", "1", "--max-in-flight", "400", "--request-timeout", "25",
                                           "--shutdown-deadline", "5", "--log-level", "info"])
        try await Task.sleep(for: .seconds(1))

        try await f.publish((0..<1_000).map { jobJSON("slow-\($0)", tokens: ["slow-dev-\($0)"], app: "slow-android") })
        let published = ContinuousClock.now
        try await f.publish((0..<40).map { jobJSON("fine-\($0)", tokens: ["fine-dev-\($0)"]) })
        let results = try await f.results(40, timeout: .seconds(20))
        let waited = ContinuousClock.now - published
        #expect(results.allSatisfy { $0.appID == "shop-android" && $0.outcome == .sent }, "\(results.prefix(3))")
        #expect(waited < .seconds(8), "the other project's 40 jobs took \(waited) behind the hung project's 1 000 (token timeout 25 s)")
        let log = worker.log
        #expect(log.contains("project answers slowly") && log.contains("slow-prod"), "\(log.suffix(2_000))")

        let stopping = ContinuousClock.now
        let status = try await worker.terminate(within: .seconds(20))
        #expect(status == 0, "exit \(String(describing: status))")
        #expect(ContinuousClock.now - stopping < .seconds(10), "SIGTERM took \(ContinuousClock.now - stopping) (deadline 5 s)")
    }
}
