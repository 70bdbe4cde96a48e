import AMQP
import Foundation
import PushCore
@testable import PushWorker
import Testing
@testable import Connector

/// Three real `push-connector worker` processes on one job queue against one emulator: they
/// share each project's FCM quota, and a 429 to one of them pauses the project on all three.
@Suite(.serialized, .timeLimit(.minutes(1))) struct QuotaSharingTests {
    /// A worker process with `/metrics` served on a free port.
    struct Replica {
        let process: WorkerProcess
        let metricsURL: String

        init(_ f: PipelineFixture, _ extra: [String]) async throws {
            process = try WorkerProcess(f, ["--log-format", "json", "--log-level", "info", "--http", "127.0.0.1:0",
                                            "--quota-refresh", "1", "--shutdown-deadline", "5"] + extra)
            let starting = try JSONValue.parse(Array(try await waitForLog(process.logPath, "worker starting").utf8))
            metricsURL = "http://" + (try #require(starting["http"]?.stringValue)) + "/metrics"
        }

        func metrics() async throws -> PrometheusExposition {
            try PrometheusExposition(try await eventsHTTP("GET", metricsURL).1)
        }
    }

    /// Starts one replica per entry of `lanes` and waits until each has counted every lane of
    /// the fleet on the job queue.
    func startFleet(_ f: PipelineFixture, lanes: [Int], extra: [String] = []) async throws -> [Replica] {
        var replicas: [Replica] = []
        for n in lanes { replicas.append(try await Replica(f, ["--lanes", "\(n)"] + extra)) }
        let total = lanes.reduce(0, +)
        for (replica, own) in zip(replicas, lanes) {
            let deadline = ContinuousClock.now + .seconds(20)
            while true {
                let m = try await replica.metrics()
                if m.value("push_connector_quota_queue_consumers") == Double(total),
                   m.value("push_connector_quota_share_permille") == (Double(own * 1000) / Double(total)).rounded() { break }
                guard ContinuousClock.now < deadline else {
                    throw FixtureError("a replica did not see \(total) consumers within 20 s; log:\n\(replica.process.log.suffix(1500))")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        return replicas
    }

    func stop(_ replicas: [Replica]) async throws {
        for replica in replicas { kill(replica.process.process.processIdentifier, SIGTERM) }
        for replica in replicas { #expect(try await replica.process.terminate(within: .seconds(15)) == 0) }
    }

    @Test func threeReplicasTogetherStayUnderTheProjectsQuota() async throws {
        let quota = 600  // per minute: 10 sends a second for the whole fleet
        let f = try await PipelineFixture { $0.quotaPerMinute = quota }
        try f.setRateLimit(perMinute: quota)
        // Lanes 1 + 1 + 2: shares of 1/4, 1/4 and 1/2.
        let replicas = try await startFleet(f, lanes: [1, 1, 2])
        try await f.publish((0..<300).map { jobJSON("share-\($0)", tokens: ["dev-\($0)"]) })

        // Over 12 s of sending, at every sample: sends since the start ≤ the quota's rate over the
        // elapsed time + one burst per process (1 s of its share, 2 + 2 + 5) + rounding.
        let start = ContinuousClock.now
        let sentAtStart = f.emulator.stats().count("sent", project: PipelineFixture.project)
        var sent = 0
        var worst = 0.0
        while ContinuousClock.now - start < .seconds(12) {
            try await Task.sleep(for: .milliseconds(200))
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            sent = f.emulator.stats().count("sent", project: PipelineFixture.project) - sentAtStart
            let allowed = Double(quota) / 60 * elapsed + 12
            worst = max(worst, Double(sent) - allowed)
            #expect(Double(sent) <= allowed, "\(sent) sends after \(elapsed) s: over the quota of \(quota)/min")
            #expect(f.emulator.stats().count("QUOTA_EXCEEDED") == 0, "the emulator answered 429")
            if Double(sent) > allowed { break }
        }
        // The fleet uses its quota rather than starving: at least 60 % of it over the 12 s.
        #expect(sent >= quota / 60 * 12 * 6 / 10, "only \(sent) sends in 12 s")
        print("quota sharing: \(sent) sends in 12 s by 3 replicas (quota \(quota)/min = \(quota / 5) per 12 s), worst margin \(worst)")
        try await stop(replicas)
    }

    @Test func a429ToOneReplicaPausesTheProjectOnAllThreeUntilItsRetryAfter() async throws {
        let retryAfter = 5
        let f = try await PipelineFixture { $0.retryAfterSeconds = retryAfter }
        try f.setRateLimit(perMinute: 1_200)  // 20 a second for the fleet: a steady stream
        let replicas = try await startFleet(f, lanes: [1, 1, 1], extra: ["--min-quota-pause", "1"])
        let total = 150
        try await f.publish([jobJSON("trigger", tokens: ["quota1-trigger"])]
            + (1..<total).map { jobJSON("pause-\($0)", tokens: ["dev-\($0)"]) })

        // The one 429: from then until its Retry-After, no replica sends for the project (a few
        // requests already on their way when the pause arrived may still land).
        let deadline = ContinuousClock.now + .seconds(20)
        while f.emulator.stats().count("QUOTA_EXCEEDED") == 0 {
            guard ContinuousClock.now < deadline else { throw FixtureError("no 429 within 20 s") }
            try await Task.sleep(for: .milliseconds(10))
        }
        let pausedAt = ContinuousClock.now
        let sentAtPause = f.emulator.stats().count("sent", project: PipelineFixture.project)
        #expect(sentAtPause < total - 50, "most jobs were already sent before the 429: the test proves little")
        var sentDuringPause = 0
        while ContinuousClock.now - pausedAt < .seconds(retryAfter - 1) {
            try await Task.sleep(for: .milliseconds(100))
            sentDuringPause = f.emulator.stats().count("sent", project: PipelineFixture.project) - sentAtPause
            #expect(sentDuringPause <= 3, "\(sentDuringPause) sends \(ContinuousClock.now - pausedAt) into the pause")
            if sentDuringPause > 3 { break }
        }
        print("fleet pause: \(sentDuringPause) sends during the \(retryAfter - 1) s after the 429 (\(sentAtPause) before)")

        // Then sends resume at the fleet's rate (what waited out the pause does not leave at
        // once: one burst per replica of 1 s of its share, 6 + 6 + 6, and rounding), and every
        // job is sent exactly once.
        let resumeDeadline = ContinuousClock.now + .seconds(30)
        var sent = sentDuringPause
        while sent < total - sentAtPause, ContinuousClock.now < resumeDeadline {
            try await Task.sleep(for: .milliseconds(100))
            let sinceResume = max(0, (ContinuousClock.now - pausedAt - .seconds(retryAfter)) / .seconds(1) + 0.5)
            sent = f.emulator.stats().count("sent", project: PipelineFixture.project) - sentAtPause
            #expect(Double(sent) <= 3 + 18 + 20 * sinceResume, "\(sent) sends \(sinceResume) s after the pause")
            if Double(sent) > 3 + 18 + 20 * sinceResume { break }
        }
        let results = try await f.results(total, timeout: .seconds(30))
        print("fleet pause: every job sent \(ContinuousClock.now - pausedAt) after the 429")
        #expect(Set(results.map(\.jobID)).count == total)
        #expect(results.allSatisfy { $0.outcome == .sent }, "\(results.filter { $0.outcome != .sent })")
        let tokens = f.emulator.recordedMessages().compactMap(\.token)
        #expect(tokens.count == total && Set(tokens).count == total, "\(tokens.count) sends for \(total) jobs")
        #expect(f.emulator.stats().count("QUOTA_EXCEEDED") == 1)

        // Every replica heard the pause; only the one that got the 429 announced it, once.
        var announced = 0.0
        for replica in replicas {
            let m = try await replica.metrics()
            #expect((m.value("push_connector_quota_pauses_total", ["direction": "received"]) ?? 0) >= 1)
            #expect(m.value("push_connector_quota_pauses_total", ["direction": "dropped"]) == 0)
            announced += m.value("push_connector_quota_pauses_total", ["direction": "sent"]) ?? 0
        }
        #expect(announced == 1)
        try await stop(replicas)
    }
}

/// The control channel's faults: lost, or fed garbage.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ControlChannelFaultTests {
    @Test func aLostControlChannelIsReopenedAndMalformedControlMessagesAreDroppedWhileSendsGoOn() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let replica = try await QuotaSharingTests.Replica(f, ["--lanes", "1"])
        try await waitForMetric(replica, "push_connector_quota_queue_consumers", [:], 1)

        // Every connection of the vhost dropped: the lanes and the control channel come back.
        try f.broker.closeAllConnections(vhost: f.settings.vhost, reason: "test: control channel lost")
        try await waitForMetric(replica, "push_connector_reconnects_total", ["connection": "control"], atLeast: 1)
        try await f.publish([jobJSON("after-loss", tokens: ["dev-1"])])
        #expect(try await f.results(1).map(\.outcome) == [.sent])

        // The new control queue is bound: garbage is dropped with a warning, a valid pause applied.
        let farAway = FleetQuota.epochMillis() + 2 * QuotaPauseMessage.maximumPauseMillis
        let client = try AMQPChannelClient(settings: f.settings)
        defer { client.close() }
        for body in ["not json", #"{"project":"shop-prod","paused_until":\#(farAway)}"#, #"{"project":"Bad Id","paused_until":1}"#,
                     #"{"project":"other-project","paused_until":\#(FleetQuota.epochMillis() + 30_000)}"#] {
            try client.publishConfirmed(exchange: f.topology.controlExchange, routingKey: "", body: Data(body.utf8))
        }
        try await waitForMetric(replica, "push_connector_quota_pauses_total", ["direction": "received"], atLeast: 1)
        try await waitForMetric(replica, "push_connector_quota_pauses_total", ["direction": "dropped"], atLeast: 3)
        let m = try await replica.metrics()
        #expect(m.value("push_connector_quota_pauses_total", ["direction": "dropped"]) == 3)
        #expect(m.value("push_connector_projects_paused", ["reason": "quota"]) == 1, "other-project, for 30 s")
        #expect(replica.process.log.contains("control message dropped"))
        // shop-prod is not paused: its jobs are still sent.
        try await f.publish([jobJSON("after-garbage", tokens: ["dev-2"])])
        #expect(try await f.results(1).map(\.outcome) == [.sent])
        #expect(try await replica.process.terminate(within: .seconds(15)) == 0)
    }

    func waitForMetric(_ replica: QuotaSharingTests.Replica, _ name: String, _ labels: [String: String] = [:], _ value: Double? = nil,
                       atLeast: Double? = nil) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        var last: Double?
        while ContinuousClock.now < deadline {
            last = try? await replica.metrics().value(name, labels)
            if let last, value.map({ last == $0 }) ?? true, atLeast.map({ last >= $0 }) ?? true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw FixtureError("\(name)\(labels) stayed at \(last.map { "\($0)" } ?? "nothing") for 20 s; log:\n\(replica.process.log.suffix(1500))")
    }
}

extension PipelineFixture {
    /// Gives the App ID a `rate_limit_per_minute` (the project's quota, as the operator knows it).
    func setRateLimit(perMinute: Int) throws {
        let original = try String(contentsOfFile: appsFile, encoding: .utf8)
        let limited = original.replacingOccurrences(of: #""project_id":"\#(Self.project)","#,
                                                    with: #""project_id":"\#(Self.project)","rate_limit_per_minute":\#(perMinute),"#)
        guard limited != original else { throw FixtureError("no project_id in \(appsFile)") }
        try limited.write(toFile: appsFile, atomically: true, encoding: .utf8)
    }
}
