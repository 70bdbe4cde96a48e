import Foundation
@testable import HTTPServer
import PushCore
@testable import PushWorker
import Testing
@testable import Connector

/// GETs `url` until it answers `status` (curl, like a probe would); returns the body.
@discardableResult
func waitForHTTP(_ url: String, status: Int, timeout: Duration = .seconds(30)) async throws -> String {
    let deadline = ContinuousClock.now + timeout
    var last = (0, "")
    while ContinuousClock.now < deadline {
        last = (try? await eventsHTTP("GET", url)) ?? (0, "")
        if last.0 == status { return last.1 }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw FixtureError("\(url) did not answer \(status) within \(timeout); last: \(last.0) \(last.1)")
}

/// Stops the broker app of the shared node, runs `body`, and starts the app again whatever happened.
func whileTheBrokerIsStopped(_ f: PipelineFixture, _ body: () async throws -> Void) async throws {
    try f.broker.rabbitmqctl(["stop_app"])
    do {
        try await body()
    } catch {
        _ = try? f.broker.rabbitmqctl(["start_app"])
        throw error
    }
    try f.broker.rabbitmqctl(["start_app"])
}

/// What operators watch: the worker's /metrics, /readyz and JSON logs, the events health probes.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ObservabilityTests {
    /// The worker's endpoints as `worker --http` serves them, on a free port.
    func serve(_ worker: SendWorker) throws -> (MicroHTTPServer, String) {
        var http = MicroHTTPServer.Configuration()
        http.port = 0
        let server = try MicroHTTPServer(configuration: http, handler: WorkerEndpoints.handler(for: worker))
        return (server, "http://127.0.0.1:\(server.port)")
    }

    @Test func metricsCountEachJobsOutcomesByAppIDAndOutcomeAndParseAsPrometheusText() async throws {
        let f = try await PipelineFixture()
        let worker = try f.makeWorker(maxAttempts: 2)
        let (server, base) = try serve(worker)
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("m-1", tokens: ["dev-a", "dev-b", "unregistered-x"], extra: #","campaign":"C9""#),
                             jobJSON("m-2", tokens: ["dev-c"], app: "no-such-app"),
                             jobJSON("m-3", tokens: ["unavailable-dev"])])
        _ = try await f.results(5)
        _ = try await f.take(2, from: f.topology.deadLetterQueue, timeout: .seconds(40))
        // Counted once confirmed, just before the ack: wait until both dead letters show.
        var text = ""
        var m = try PrometheusExposition("")
        let deadline = ContinuousClock.now + .seconds(10)
        repeat {
            let (status, body) = try await eventsHTTP("GET", base + "/metrics")
            #expect(status == 200)
            text = body
            m = try PrometheusExposition(text)
            if m.samples.filter({ $0.name == "push_connector_dead_letters_total" }).map(\.value).reduce(0, +) >= 2 { break }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        shutdown.trigger()
        await task.value
        await server.stop()

        let app = "shop-android"
        #expect(m.value("push_connector_results_total", ["app_id": app, "outcome": "sent"]) == 2)
        #expect(m.value("push_connector_results_total", ["app_id": app, "outcome": "invalid_token"]) == 1)
        // A dead-lettered job also publishes one dead_lettered result per recipient.
        #expect(m.value("push_connector_results_total", ["app_id": "unknown", "outcome": "dead_lettered"]) == 1)
        #expect(m.value("push_connector_results_total", ["app_id": app, "outcome": "dead_lettered"]) == 1)
        #expect(m.samples.filter { $0.name == "push_connector_results_total" }.count == 4, "\(text)")
        #expect(m.value("push_connector_dead_letters_total", ["app_id": "unknown", "code": "UNKNOWN_APP"]) == 1)
        #expect(m.value("push_connector_dead_letters_total", ["app_id": app, "code": "RETRIES_EXHAUSTED"]) == 1)
        #expect(m.value("push_connector_retries_total", ["tier": "1s"]) == 1)
        #expect(m.value("push_connector_fcm_responses_total", ["status": "200"]) == 2)
        #expect(m.value("push_connector_fcm_responses_total", ["status": "404"]) == 1)
        #expect(m.value("push_connector_fcm_responses_total", ["status": "503"]) == 2)
        #expect(m.value("push_connector_fcm_request_duration_seconds_count") == 5)
        #expect((m.value("push_connector_fcm_request_duration_seconds_sum") ?? 0) > 0)
        #expect(m.value("push_connector_fcm_requests_in_flight") == 0)
        #expect(m.value("push_connector_confirms_pending") == 0)
        #expect(m.value("push_connector_lanes") == 1)
        #expect(m.value("push_connector_lanes_connected") == 1)
        #expect(m.value("push_connector_projects_paused", ["reason": "quota"]) == 0)
        #expect(m.value("push_connector_reconnects_total", ["connection": "consumer"]) == 0)
        let build = m.samples.filter { $0.name == "push_connector_build_info" }
        #expect(build.count == 1 && build.first?.value == 1 && build.first?.labels["version"]?.isEmpty == false)
        for name in ["push_connector_config_reloads_total", "push_connector_fcm_request_duration_seconds", "push_connector_projects_paused"] {
            #expect(m.types[name] != nil, "\(name) missing")
        }
        let promtool = try promtoolCheckMetrics(text)
        #expect(promtool.status == 0, "promtool: \(promtool.output)")
    }

    @Test func readyzTurns503WhileTheBrokerIsStoppedAnd200AgainAfter() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let worker = try f.makeWorker()
        let (server, base) = try serve(worker)
        let (shutdown, task) = f.startWorker(worker)
        try await waitForHTTP(base + "/readyz", status: 200)
        try await whileTheBrokerIsStopped(f) {
            let reason = try await waitForHTTP(base + "/readyz", status: 503)
            #expect(reason.contains("lane 0"), "\(reason)")
            #expect(try await eventsHTTP("GET", base + "/healthz").0 == 200, "the process is alive: no restart wanted")
        }
        try await waitForHTTP(base + "/readyz", status: 200, timeout: .seconds(60))
        let m = try PrometheusExposition(try await eventsHTTP("GET", base + "/metrics").1)
        #expect((m.value("push_connector_reconnects_total", ["connection": "consumer"]) ?? 0) >= 1)
        #expect(m.value("push_connector_lanes_connected") == 1)
        // Still delivering after the outage.
        try await f.publish([jobJSON("after-outage", tokens: ["dev-1"])])
        #expect(try await f.results(1).map(\.jobID) == ["after-outage"])
        shutdown.trigger()
        await task.value
        #expect(try await eventsHTTP("GET", base + "/healthz").0 == 503, "a stopped worker is not healthy")
        await server.stop()
    }

    @Test func theWorkerBinaryWritesJSONLinesThatCarryTheJobAndServesItsEndpoints() async throws {
        let f = try await PipelineFixture()
        let worker = try WorkerProcess(f, ["--log-format", "json", "--log-level", "debug", "--http", "127.0.0.1:0",
                                            "--prefetch-bytes", "\(SendWorker.suggestedPrefetchBytes)"])
        let starting = try JSONValue.parse(Array(try await waitForLog(worker.logPath, "worker starting").utf8))
        let base = "http://" + (try #require(starting["http"]?.stringValue))
        try await waitForHTTP(base + "/readyz", status: 200)
        try await f.publish([jobJSON("json-1", tokens: ["dev-1"], extra: #","campaign":"C5""#),
                             jobJSON("json-2", tokens: ["dev-2"], app: "no-such-app")])
        _ = try await f.results(1)
        _ = try await f.take(1, from: f.topology.deadLetterQueue)
        try await waitForLog(worker.logPath, "job dead-lettered")
        kill(worker.process.processIdentifier, SIGHUP)
        try await waitForLog(worker.logPath, "configuration reloaded")
        let metrics = try PrometheusExposition(try await eventsHTTP("GET", base + "/metrics").1)
        #expect(metrics.value("push_connector_results_total", ["app_id": "shop-android", "outcome": "sent"]) == 1)
        #expect(metrics.value("push_connector_config_reloads_total", ["result": "ok"]) == 1)
        #expect(metrics.value("push_connector_config_reloads_total", ["result": "error"]) == 0)
        // --prefetch-bytes 8 MiB holds eight jobs of --max-job-bytes (1 MiB) per lane: where the
        // sized prefetch starts, and stays while two small jobs never fill half of it.
        let lanes = try #require(metrics.value("push_connector_lanes"))
        #expect(lanes == Double(min(ProcessInfo.processInfo.activeProcessorCount, SendWorker.mostAutomaticLanes)), "--lanes auto")
        #expect(metrics.value("push_connector_prefetch") == 8 * lanes)
        #expect(try await worker.terminate(within: .seconds(30)) == 0)

        let lines = try worker.log.split(separator: "\n").map { line in
            let json = try JSONValue.parse(Array(line.utf8))
            #expect(LoggerFormatTests.isMillisecondStamp(json["ts"]?.stringValue ?? ""), "\(line)")
            #expect(json["level"]?.stringValue != nil && json["msg"]?.stringValue != nil, "\(line)")
            return json
        }
        let dead = try #require(lines.first { $0["msg"] == .string("job dead-lettered") })
        #expect(dead["job_id"] == .string("json-2"))
        #expect(dead["app_id"] == .string("no-such-app"))
        #expect(dead["attempt"] == .string("1"))
        #expect(dead["code"] == .string("UNKNOWN_APP"))
        let processed = try #require(lines.first { $0["msg"] == .string("job processed") && $0["job_id"] == .string("json-1") })
        #expect(processed["level"] == .string("debug"))
        #expect(processed["app_id"] == .string("shop-android") && processed["campaign"] == .string("C5"))
        #expect(processed["results"] == .string("sent=1"))
        #expect(lines.contains { $0["msg"] == .string("published, confirmed and acked") && $0["job_id"] == .string("json-1") })
    }

    @Test func eventsHealthzGoes503WhileTheBrokerOrTheDatabaseIsUnavailable() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let db = f.directory + "/events.db"
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: db)
        try await waitForHTTP(events.base + "/healthz", status: 200)
        #expect(try await eventsHTTP("GET", events.base + "/readyz").0 == 200)
        try await whileTheBrokerIsStopped(f) {
            let reason = try await waitForHTTP(events.base + "/healthz", status: 503)
            #expect(reason.contains("broker"), "\(reason)")
        }
        try await waitForHTTP(events.base + "/healthz", status: 200, timeout: .seconds(60))
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        let reason = try await waitForHTTP(events.base + "/healthz", status: 503)
        #expect(reason.contains("database"), "\(reason)")
        #expect(try await eventsHTTP("GET", events.base + "/readyz").0 == 503)
        await events.stop()
    }
}
