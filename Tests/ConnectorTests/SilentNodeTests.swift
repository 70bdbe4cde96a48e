import AMQP
import BrokerHarness
import Foundation
import Glibc
import Testing
@testable import Connector

/// A broker node that goes silent (packets dropped: no reset, no close) under the shipped
/// `events` service with two node URLs, the first through a `FreezingRelay`: the stuck
/// connections are given up within two heartbeats and the second node taken, `/healthz` says so
/// meanwhile, and SIGTERM ends the process within its limits (second audit, finding 1).
@Suite(.serialized, .timeLimit(.minutes(3))) struct SilentNodeTests {
    /// A 500-event batch, ~120 KB (event ids near their 128-byte limit): a few fill a stuck socket.
    static func batch(_ n: Int) -> String {
        let padding = String(repeating: "x", count: 100)
        return #"{"events":["# + (0..<500).map { i in
            eventJSON("open", "mnid2m.\(n).\(i).1.1.1", extra: #","event_id":"e-\#(n)-\#(i)-\#(padding)""#)
        }.joined(separator: ",") + "]}"
    }

    @Test func eventsBehindASilentNodeMoveToTheNextWithinTwoHeartbeatsAndStopOnSIGTERM() async throws {
        let f = try await PipelineFixture()
        let direct = try f.broker.settings()
        let relay = try FreezingRelay(targetPort: direct.port)
        defer { relay.close() }
        let port = try UnusedPort.pick()
        let nodes = "amqp://guest:guest@127.0.0.1:\(relay.port)\(f.settings.vhost == "/" ? "/" : "/" + f.settings.vhost),\(f.vhostURL)"
        let log = f.directory + "/events.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let events = Process()
        events.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        events.arguments = ["events", "--http", "127.0.0.1:\(port)", "--no-consume", "--amqp-url", nodes, "--prefix", f.topology.prefix,
                            "--no-declare", "--heartbeat", "2", "--log-level", "info"]
        events.environment = ["PATH": "/usr/bin:/bin"]
        events.standardError = FileHandle(forWritingAtPath: log)
        try events.run()
        defer { if events.isRunning { kill(events.processIdentifier, SIGKILL) } }
        let base = "http://127.0.0.1:\(port)"
        try await eventually("the endpoint answers") { (try? httpStatusNow(base + "/healthz")) == 200 }
        for n in 0..<4 { #expect((try? await eventsHTTP("POST", base + "/events", body: Self.batch(n)).0) == 202) }
        #expect(relay.connections >= 1, "the first node was not used")

        relay.freeze()
        let frozenAt = ContinuousClock.now
        // A burst, as apps flushing their queues, then one post every 250 ms, each on its own
        // (start, answer); /healthz read every 250 ms meanwhile. Each request on a thread of its
        // own: curl blocks its thread, and the cooperative pool has two.
        let burst = (0..<20).map { n in Task { await onItsOwnThread { (try? httpStatusNow(base + "/events", body: Self.batch(10_000 + n), maxTime: 20)) ?? 0 } } }
        let health = Task {
            await onItsOwnThread {
                var seen: [Int] = []
                while ContinuousClock.now - frozenAt < .seconds(20) {
                    seen.append((try? httpStatusNow(base + "/healthz")) ?? 0)
                    usleep(250_000)
                }
                return seen
            }
        }
        var probes: [(started: Duration, answer: Task<Int, Never>)] = []
        for n in 0..<80 {
            probes.append((ContinuousClock.now - frozenAt, Task { await onItsOwnThread { (try? httpStatusNow(base + "/events", body: Self.batch(20_000 + n), maxTime: 20)) ?? 0 } }))
            try await Task.sleep(for: .milliseconds(250))
        }
        var statuses: [(Duration, Int)] = []
        for probe in probes { statuses.append((probe.started, await probe.answer.value)) }
        let healthSeen = await health.value
        var burstAnswers: [Int] = []
        for post in burst { burstAnswers.append(await post.value) }
        // Back from the first post after which every later one was taken.
        let back = statuses.indices.first { i in statuses[i...].allSatisfy { $0.1 == 202 } }
        let outage = try #require(back.map { statuses[$0].0 },
                                  "never came back: \(statuses.map(\.1)); \(String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self))")
        // Two heartbeats (4 s) for the connection, the slot's retry pause and a margin.
        #expect(outage < .seconds(8), "the second node was taken after \(outage): \(statuses.map(\.1))")
        #expect((statuses.map(\.1) + burstAnswers).allSatisfy { $0 == 202 || $0 == 503 }, "\(statuses.map(\.1)) \(burstAnswers)")
        #expect(healthSeen.contains(503) && healthSeen.last == 200, "/healthz: \(healthSeen)")
        let logText = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
        #expect(logText.contains("events publisher connection lost"), "\(logText)")
        print("silent node: posts taken again from \(outage) after the freeze; answers \(statuses.map(\.1)); /healthz \(healthSeen)")
        let stopping = ContinuousClock.now
        kill(events.processIdentifier, SIGTERM)
        while events.isRunning, ContinuousClock.now - stopping < .seconds(30) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!events.isRunning, "SIGTERM did not end the process within 30 s")
        #expect(ContinuousClock.now - stopping < .seconds(25), "stopped after \(ContinuousClock.now - stopping)")
        print("silent node: SIGTERM to exit \(ContinuousClock.now - stopping)")
    }
}

extension SilentNodeTests {
    /// SIGTERM while the publishers' writes wait on a silent node (heartbeat 30 s: the connections
    /// would be given up only after a minute): the process ends within the server's stop and the
    /// publishers' close limit (`EventPublisher.closeLimit`), not when the node comes back.
    @Test func sigtermWhileWritesWaitOnASilentNodeEndsTheEventsServiceWithinItsLimits() async throws {
        let f = try await PipelineFixture()
        let relay = try FreezingRelay(targetPort: try f.broker.settings().port)
        defer { relay.close() }
        let port = try UnusedPort.pick()
        let events = Process()
        events.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        events.arguments = ["events", "--http", "127.0.0.1:\(port)", "--no-consume", "--amqp-url", "amqp://guest:guest@127.0.0.1:\(relay.port)/",
                            "--prefix", f.topology.prefix, "--no-declare", "--heartbeat", "30", "--log-level", "warn"]
        events.environment = ["PATH": "/usr/bin:/bin"]
        try events.run()
        defer { if events.isRunning { kill(events.processIdentifier, SIGKILL) } }
        let base = "http://127.0.0.1:\(port)"
        try await eventually("the endpoint answers") { (try? httpStatusNow(base + "/healthz")) == 200 }
        #expect(await onItsOwnThread { (try? httpStatusNow(base + "/events", body: Self.batch(1), maxTime: 20)) ?? 0 } == 202)
        relay.freeze()
        let burst = (0..<20).map { n in Task { await onItsOwnThread { (try? httpStatusNow(base + "/events", body: Self.batch(100 + n), maxTime: 20)) ?? 0 } } }
        try await Task.sleep(for: .seconds(3))
        let stopping = ContinuousClock.now
        kill(events.processIdentifier, SIGTERM)
        while events.isRunning, ContinuousClock.now - stopping < .seconds(45) { try await Task.sleep(for: .milliseconds(50)) }
        let took = ContinuousClock.now - stopping
        #expect(!events.isRunning && events.terminationStatus == 0, "SIGTERM did not end the process within 45 s")
        // The HTTP server's stop (suspended requests answered within 10 s) and the close limit.
        #expect(took < .seconds(25), "stopped after \(took)")
        for post in burst { #expect([0, 202, 503].contains(await post.value)) }
        print("silent node: SIGTERM with writes waiting to exit \(took)")
    }
}

/// `work` on a new OS thread, awaited: blocking calls (a child process's output) that must run
/// at the same time as others, which the two-thread cooperative pool would serialise.
func onItsOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { done in Thread.detachNewThread { done.resume(returning: work()) } }
}

/// The status of a GET, or of a POST of `body` as JSON, within `maxTime` seconds (curl; 0 when
/// no answer came). It blocks its thread.
func httpStatusNow(_ url: String, body: String? = nil, maxTime: Int = 2) throws -> Int {
    var arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "\(maxTime)"]
    if body != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
    return Int(try runTool("curl", arguments + [url], input: body).1) ?? 0
}
