import Foundation
import PushCore
import Testing
@testable import Connector

/// The built `push-connector` binary next to the test bundle.
func builtProduct(_ name: String) throws -> String {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
    let path = directory + "/" + name
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw FixtureError("\(path) is missing: build the package first (swift build)")
    }
    return path
}

/// The worker as a real process, stopped by a real SIGTERM.
@Suite(.serialized, .timeLimit(.minutes(3))) struct WorkerProcessTests {
    @Test func sigtermMidLoadLosesNothingAndExitsZero() async throws {
        let f = try await PipelineFixture()
        let total = 400
        try await f.publish((0..<total).map { jobJSON("term-\($0)", tokens: ["slow300-dev-\($0)"]) })

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        process.arguments = ["worker", "--config", f.appsFile, "--amqp-url", f.broker.url, "--prefix", f.topology.prefix,
                             "--retry-tiers", "1", "--fcm-url", f.emulator.baseURL, "--prefetch", "20", "--shutdown-deadline", "20",
                             "--no-declare", "--log-level", "warn"]
        process.environment = ["PATH": "/usr/bin:/bin"]
        try process.run()
        var results = try await f.results(30)
        kill(process.processIdentifier, SIGTERM)
        let exitDeadline = ContinuousClock.now + .seconds(30)
        while process.isRunning, ContinuousClock.now < exitDeadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning, "the worker did not exit within 30 s of SIGTERM")
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(process.terminationReason == .exit)

        // Everything the worker acked has its result; the rest is still queued.
        while let more = try? await f.results(1, timeout: .milliseconds(500)) { results += more }
        let queued = try f.messageCount(f.topology.jobsQueue)
        #expect(queued > 0, "SIGTERM came after the load: the test proved nothing")
        #expect(results.count + queued == total, "results \(results.count) + queued \(queued) != \(total)")
        #expect(Set(results.map(\.jobID)).count == results.count, "a job was answered twice")

        // A second worker finishes the rest: every job ends with exactly one result.
        let (shutdown, task) = f.startWorker(try f.makeWorker(prefetch: 200))
        results += try await f.results(queued, timeout: .seconds(60))
        shutdown.trigger()
        await task.value
        #expect(Set(results.map(\.jobID)).count == total)
        #expect(results.count == total)
    }

    @Test func sighupReloadsTheAppFileAndABadFileIsRefused() async throws {
        let f = try await PipelineFixture()
        let log = f.directory + "/worker.log"
        #expect(FileManager.default.createFile(atPath: log, contents: nil))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        process.arguments = ["worker", "--config", f.appsFile, "--amqp-url", f.broker.url, "--prefix", f.topology.prefix,
                             "--retry-tiers", "1", "--fcm-url", f.emulator.baseURL, "--no-declare", "--log-level", "info",
                             "--config-poll", "0"]  // SIGHUP alone: no polling
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        // SIGHUP's handler is installed before this line; a SIGHUP sent earlier would kill the process.
        try await waitForLog(log, "worker starting")

        try await f.publish([jobJSON("before", tokens: ["dev-1"], app: "late-app")])
        let dead = try await f.take(1, from: f.topology.deadLetterQueue)
        #expect(dead.first?.properties.headers["push-error-code"]?.stringValue == "UNKNOWN_APP")
        #expect(try await f.results(1).map(\.outcome) == [.deadLettered])

        // A broken file is refused — the worker says so — and the old configuration stays in force.
        let original = try String(contentsOfFile: f.appsFile, encoding: .utf8)
        try "{\"apps\": [".write(toFile: f.appsFile, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        let refused = try await waitForLog(log, "configuration reload refused; keeping the previous one")
        #expect(refused.contains(f.appsFile), "the refusal names the file: \(refused)")
        try await f.publish([jobJSON("still-served", tokens: ["dev-2"]), jobJSON("still-unknown", tokens: ["dev-4"], app: "late-app")])
        let served = try await f.results(2)
        #expect(Set(served.map { "\($0.jobID) \($0.outcome.rawValue)" }) == ["still-served sent", "still-unknown dead_lettered"])
        let stillDead = try await f.take(1, from: f.topology.deadLetterQueue)
        #expect(stillDead.first?.properties.headers["push-error-code"]?.stringValue == "UNKNOWN_APP")
        #expect(!(try String(contentsOfFile: log, encoding: .utf8)).contains("configuration reloaded"))

        // The fixed file adds the App ID; once the reload is logged, its jobs are delivered.
        try f.appsAddingLateApp(original).write(toFile: f.appsFile, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        try await f.expectLateAppServedThenStop(process, log: log)
    }
}

extension PipelineFixture {
    /// The App ID file `original` with a second App ID, `late-app`, of the same project.
    func appsAddingLateApp(_ original: String) -> String {
        original.replacingOccurrences(of: #"{"apps":[{"app_id":"shop-android""#,
                                      with: #"{"apps":[{"app_id":"late-app","project_id":"shop-prod","credentials_file":"\#(directory)/sa.json"},{"app_id":"shop-android""#)
    }

    /// Once the worker logs a reload with `late-app`, a job of it is delivered; then SIGTERM
    /// ends the worker with exit code 0.
    func expectLateAppServedThenStop(_ process: Process, log: String) async throws {
        let reloaded = try await waitForLog(log, "configuration reloaded")
        #expect(reloaded.contains("apps=late-app,shop-android"), "\(reloaded)")
        try await publish([jobJSON("after", tokens: ["dev-3"], app: "late-app")])
        let results = try await results(1)
        #expect(results.map(\.jobID) == ["after"])
        #expect(results.first?.outcome == .sent)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}

/// Waits until the log file has a line containing `text` and returns that line.
@discardableResult
func waitForLog(_ path: String, _ text: String, timeout: Duration = .seconds(30)) async throws -> String {
    let deadline = ContinuousClock.now + timeout
    while true {
        let content = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        if let line = content.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
        guard ContinuousClock.now < deadline else {
            throw FixtureError("no log line with \"\(text)\" within \(timeout); log:\n\(content.suffix(2000))")
        }
        try await Task.sleep(for: .milliseconds(50))
    }
}
