import BrokerHarness
import Foundation
import Testing

/// The test broker runs the RabbitMQ release line the run asked for (`PUSH_TEST_RABBITMQ_LINE`,
/// scripts/rabbitmq-lines.sh), so that a green run on "newest" means what it says.
@Suite(.timeLimit(.minutes(2))) struct RabbitMQLineTests {
    @Test func theTestBrokerRunsTheRequestedRabbitMQLine() async throws {
        let broker = try await TestBroker.shared()
        let status = try broker.rabbitmqctl(["status"])
        let running = try #require(status.split(separator: "\n").first { $0.contains("RabbitMQ version:") },
                                   "no version in rabbitmqctl status:\n\(status)")
        let environment = ProcessInfo.processInfo.environment
        guard environment["PUSH_TEST_AMQP_URL"] == nil else {
            print("RabbitMQ line: an external broker (PUSH_TEST_AMQP_URL): \(running)")
            return
        }
        let line = environment["PUSH_TEST_RABBITMQ_LINE"] ?? "system"
        let package = try lineVersion(line)  // e.g. 4.3.6-1
        let upstream = package.split(separator: "-").first.map(String.init) ?? package
        print("RabbitMQ line \(line): package \(package), node says \(running.trimmingCharacters(in: .whitespaces))")
        #expect(running.hasSuffix(" " + upstream), "line \(line) should run \(upstream); \(running)")
    }

    /// `scripts/rabbitmq-lines.sh version LINE`.
    private func lineVersion(_ line: String) throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/rabbitmq-lines.sh").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["version", line]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let version = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, !version.isEmpty else {
            throw LineError(description: "scripts/rabbitmq-lines.sh version \(line) failed")
        }
        return version
    }
}

/// Why the line's version could not be read.
private struct LineError: Error, CustomStringConvertible { let description: String }
