import Foundation
import Testing
@testable import Connector

/// The worker picks up an App ID file changed on disk the way Kubernetes changes a mounted
/// ConfigMap: `apps.json` -> `..data/apps.json`, `..data` -> a timestamped folder, and an
/// update swaps the `..data` link. No SIGHUP is sent.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ConfigReloadTests {
    /// Writes `text` as a new ConfigMap generation and points `..data` at it (atomic rename).
    private func publishGeneration(_ text: String, in mount: String, number: Int) throws {
        let generation = mount + "/..gen\(number)"
        try FileManager.default.createDirectory(atPath: generation, withIntermediateDirectories: true)
        try text.write(toFile: generation + "/apps.json", atomically: true, encoding: .utf8)
        let temporary = mount + "/..data_tmp"
        try? FileManager.default.removeItem(atPath: temporary)
        try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: "..gen\(number)")
        #expect(rename(temporary, mount + "/..data") == 0)
    }

    @Test func aConfigMapSwapIsReloadedWithoutSIGHUPAndABadOneKeepsTheOldConfiguration() async throws {
        let f = try await PipelineFixture()
        let mount = f.directory + "/config"
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let original = try String(contentsOfFile: f.appsFile, encoding: .utf8)
        try publishGeneration(original, in: mount, number: 1)
        try FileManager.default.createSymbolicLink(atPath: mount + "/apps.json", withDestinationPath: "..data/apps.json")

        let log = f.directory + "/worker.log"
        #expect(FileManager.default.createFile(atPath: log, contents: nil))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        process.arguments = ["worker", "--config", mount + "/apps.json", "--config-poll", "1", "--amqp-url", f.broker.url,
                             "--prefix", f.topology.prefix, "--retry-tiers", "1", "--fcm-url", f.emulator.baseURL, "--no-declare"]
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        try await waitForLog(log, "worker starting")

        // A broken generation: refused, logged with the file named, the old App IDs still served.
        try publishGeneration("{\"apps\": [", in: mount, number: 2)
        let refused = try await waitForLog(log, "configuration reload refused; keeping the previous one")
        #expect(refused.contains("apps.json"), "\(refused)")
        try await f.publish([jobJSON("still-served", tokens: ["dev-1"])])
        #expect(try await f.results(1).map(\.jobID) == ["still-served"])

        // A good generation adding an App ID: reloaded, and its jobs are delivered.
        try publishGeneration(f.appsAddingLateApp(original), in: mount, number: 3)
        try await f.expectLateAppServedThenStop(process, log: log)
    }
}
