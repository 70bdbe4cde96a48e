import AMQP
import Foundation
import PushCore
import Testing
@testable import Connector

/// Operator commands against the real broker and emulator.
@Suite(.serialized, .timeLimit(.minutes(2))) struct OperatorCommandTests {
    @Test func configCheckAcceptsAWellFormedFileWithLoadableCredentials() async throws {
        let f = try await PipelineFixture()
        let (code, out, err) = await runCLI(["config", "check", f.appsFile])
        #expect(code == 0, "\(err)")
        #expect(out.contains("1 App ID(s) OK: shop-android"))
    }

    @Test func sendPublishesJSONLinesWithConfirmsAndRefusesInvalidJobsWholesale() async throws {
        let f = try await PipelineFixture()
        let file = f.directory + "/jobs.jsonl"
        try [jobJSON("l1", tokens: ["a"]), jobJSON("l2", tokens: ["b"]), jobJSON("l3", tokens: ["c"])].joined(separator: "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let common = ["--amqp-url", f.broker.url, "--prefix", f.topology.prefix]
        let (code, out, err) = await runCLI(["send", "--config", f.appsFile] + common + [file])
        #expect(code == 0, "\(err)")
        #expect(out.contains("published 3 job(s)"))
        #expect(try f.messageCount(f.topology.jobsQueue) == 3)

        let bad = f.directory + "/bad.jsonl"
        try [jobJSON("ok", tokens: ["a"]), #"{"job_id":"x","app_id":"shop-android","data":{"n":1},"topic":"t"}"#].joined(separator: "\n")
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = await runCLI(["send", "--config", f.appsFile] + common + [bad])
        #expect(refused.0 == 2)
        #expect(refused.2.contains("\(bad):2: data.n"))
        #expect(try f.messageCount(f.topology.jobsQueue) == 3, "nothing of a refused batch is published")
    }

    @Test func aBadBrokerURLIsOneLineAndExit2() async {
        let (code, _, err) = await runCLI(["topology", "declare", "--amqp-url", "http://nope"])
        #expect(code == 2)
        #expect(!err.contains("\n"))
    }

    @Test func twoWorkersOnOneQueueShareTheWork() async throws {
        let f = try await PipelineFixture()
        let first = try f.makeWorker(prefetch: 10)
        let second = try f.makeWorker(prefetch: 10)
        let (s1, t1) = f.startWorker(first)
        let (s2, t2) = f.startWorker(second)
        try await f.publish((0..<200).map { jobJSON("share-\($0)", tokens: ["slow10-d\($0)"]) })
        let results = try await f.results(200)
        s1.trigger(); s2.trigger()
        await t1.value; await t2.value
        #expect(Set(results.map(\.jobID)).count == 200)
        let a = first.counters.acked.load(ordering: .relaxed), b = second.counters.acked.load(ordering: .relaxed)
        #expect(a + b == 200)
        #expect(a > 20 && b > 20, "work not shared: \(a) / \(b)")
    }
}
