import Foundation
import PushCore
import Testing
@testable import Connector

/// A project with a `rate_limit_per_minute` below what the worker could send: its sends wait
/// in the worker for their turn (up to `maxHeldWait`, 30 s), not in the retry tiers, so the
/// quota is used whole and the broker sees no retry copies (issue 32, item 6).
@Suite(.serialized, .timeLimit(.minutes(1))) struct PacedProjectTests {
    @Test func aPacedBacklogIsSentAtTheLimitWithoutRetryCopies() async throws {
        let perMinute = 1_200  // 20 sends a second
        let jobs = 300  // 1 s of burst, then 14 s of pacing: beyond the 5 s a send may wait in FCMClient
        let f = try await PipelineFixture(retryTiers: [5, 30, 120])
        try f.setRateLimit(perMinute: perMinute)
        let replica = try await QuotaSharingTests.Replica(f, [])
        let sentBefore = f.emulator.stats().count("sent", project: PipelineFixture.project)
        let start = ContinuousClock.now
        try await f.publish((0..<jobs).map { jobJSON("paced-\($0)", tokens: ["dev-\($0)"]) })

        var sent = 0
        while sent < jobs, ContinuousClock.now - start < .seconds(30) {
            try await Task.sleep(for: .milliseconds(200))
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            sent = f.emulator.stats().count("sent", project: PipelineFixture.project) - sentBefore
            let allowed = Double(perMinute) / 60 * elapsed + 20 + 2  // the rate, one burst, rounding
            #expect(Double(sent) <= allowed, "\(sent) sends after \(elapsed) s: over \(perMinute)/min")
        }
        let took = (ContinuousClock.now - start) / .seconds(1)
        let used = Double(jobs - 20) / (took * Double(perMinute) / 60)
        print("paced project: \(jobs) jobs sent in \(took) s at \(perMinute)/min: quota use \(used)")
        #expect(sent == jobs, "\(sent) of \(jobs) sent in 30 s")
        // 280 paced sends take 14 s at the limit; 0.9 of the quota allows 15.6 s (+ the 0.2 s poll).
        #expect(took <= 16, "the backlog took \(took) s: under 0.9 of the quota")
        let text = try await eventsHTTP("GET", replica.metricsURL).1
        #expect(text.contains("# TYPE push_connector_retries_total counter"), "the metric read below is not exported")
        let metrics = try PrometheusExposition(text)
        #expect(metrics.sum("push_connector_retries_total") == 0, "retry copies published for a paced project")
        #expect(f.emulator.stats().count("sent", project: PipelineFixture.project) - sentBefore == jobs, "a paced job was sent twice")
        kill(replica.process.process.processIdentifier, SIGTERM)
        #expect(try await replica.process.terminate(within: .seconds(15)) == 0)
    }
}
