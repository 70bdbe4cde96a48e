import BrokerHarness
import Foundation
import Testing
@testable import Connector

/// `push-connector` holds private keys: whatever core limit it is started with, it runs with none.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ProcessHardeningTests {
    static func coreLimitLine(pid: Int32) -> String? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("Max core file size") }.map(String.init)
    }

    @Test func pushConnectorDropsTheCoreLimitItWasStartedWith() async throws {
        let broker = try await TestBroker.shared()
        let directory = try temporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // Start it with unlimited core files, as a careless service manager might.
        process.arguments = ["-c", #"ulimit -c unlimited && exec "$0" "$@""#, try builtProduct("push-connector"),
                             "events", "--http", "127.0.0.1:0", "--no-consume", "--no-declare", "--db", directory + "/events.db",
                             "--amqp-url", broker.url, "--log-level", "info"]
        process.environment = ["PATH": "/usr/bin:/bin"]
        let logPath = directory + "/events.log"
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else { throw FixtureError("cannot create \(logPath)") }
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let pid = process.processIdentifier
        try await eventually("the core limit of the running process to be 0") {
            guard process.isRunning else { throw FixtureError("push-connector exited with \(process.terminationStatus)") }
            let line = Self.coreLimitLine(pid: pid) ?? ""
            return line.split(separator: " ", omittingEmptySubsequences: true).suffix(3).prefix(2) == ["0", "0"]
        }
        // SIGTERM once it serves (its handlers are installed by then): earlier, the default
        // action would end it with status 15, a race of this test and not of the product.
        try await waitForLog(logPath, "listening")
        kill(pid, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
