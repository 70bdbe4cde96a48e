import AMQP
import BrokerHarness
import Foundation
import PushCore
import Testing
@testable import Connector

/// Broker-side faults for worker tests, driven through `rabbitmqctl` on the fixture's node.
extension PipelineFixture {
    /// Deliveries consumers of the fixture's vhost hold unacknowledged, as their channels count
    /// them right now (queue statistics lag by seconds; use a vhost of the test's own).
    func unackedDeliveries() throws -> Int {
        let output = try broker.rabbitmqctl(["list_channels", "--no-table-headers", "vhost", "messages_unacknowledged"])
        return output.split(separator: "\n").reduce(0) { sum, line in
            let columns = line.split(separator: "\t").map(String.init)
            return columns.count == 2 && columns[0] == settings.vhost ? sum + (Int(columns[1]) ?? 0) : sum
        }
    }

    /// Makes `queue` refuse publishes (a `max-length: 1`, `overflow: reject-publish` policy), then
    /// publishes fillers straight into it until the broker nacks one (a quorum queue refuses only
    /// once it is over the limit). Returns the number of fillers it took.
    func refusePublishes(on queue: String) async throws -> Int {
        try broker.rabbitmqctl(["set_policy", "-p", settings.vhost, "--apply-to", "queues", "--priority", "100",
                                policyName(queue), "^" + NSRegularExpression.escapedPattern(for: queue) + "$",
                                #"{"max-length":1,"overflow":"reject-publish"}"#])
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        defer { Task { await publisher.close() } }
        for n in 0..<50 {
            do {
                try await publisher.publish(exchange: "", routingKey: queue, body: Data("filler-\(n)".utf8))
            } catch let error as AMQPError where error.code == .nacked {
                return n
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw FixtureError("\(queue) never refused a publish under its reject-publish policy")
    }

    /// Removes the policy of `refusePublishes(on:)` (the fillers stay in the queue).
    func allowPublishes(on queue: String) throws {
        try broker.rabbitmqctl(["clear_policy", "-p", settings.vhost, policyName(queue)])
    }

    func isFiller(_ d: Delivery) -> Bool { String(decoding: d.body, as: UTF8.self).hasPrefix("filler-") }

    private func policyName(_ queue: String) -> String { "refuse-\(queue)" }

    /// How many times the emulator accepted a message for `token`.
    func sends(to token: String) -> Int { emulator.recordedMessages().count(where: { $0.token == token }) }

    /// Results taken until every one of `total` jobs has one (duplicates included, in order).
    func collectResults(covering total: Int, timeout: Duration = .seconds(90)) async throws -> [SendResult] {
        var results: [SendResult] = []
        let deadline = ContinuousClock.now + timeout
        while Set(results.map(\.jobID)).count < total {
            guard let d = try await resultsTap.next(by: deadline) else {
                // Where the missing jobs are (the job queue, a retry tier, the DLQ), for the CI page.
                let queues = (try? broker.rabbitmqctl(["list_queues", "-p", settings.vhost, "--no-table-headers",
                                                       "name", "messages", "messages_ready"])) ?? "(list_queues failed)"
                throw FixtureError("results for \(Set(results.map(\.jobID)).count) of \(total) jobs within \(timeout); queues:\n\(queues)")
            }
            results.append(try SendResult.decode(JSONValue.parse(d.body)))
        }
        return results
    }

    /// The AMQP URL of the fixture's vhost, for a worker process.
    var vhostURL: String { settings.vhost == "/" ? broker.url : broker.url + settings.vhost }

    /// The job queue settled: nothing ready, nothing unacked.
    func jobsSettled() throws -> Bool {
        try messageCount(topology.jobsQueue) == 0 && unackedDeliveries() == 0
    }
}

extension TestBroker {
    /// Raises (tiny watermark) or clears (the default 0.4) the node's memory alarm: the broker
    /// then blocks every connection that publishes. Tests run serially; always clear it in a defer.
    func memoryAlarm(_ on: Bool) throws {
        try rabbitmqctl(["set_vm_memory_high_watermark", on ? "0.0000001" : "0.4"])
    }
}

/// `push-connector worker` as a child process with its log in a file.
final class WorkerProcess {
    let process = Process()
    let logPath: String

    /// `environment` is added to the child's (e.g. libfaketime's, for a clock of its own).
    init(_ f: PipelineFixture, _ extra: [String], environment: [String: String] = [:]) throws {
        logPath = f.directory + "/worker-\(UUID().uuidString.prefix(6)).log"
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else { throw FixtureError("cannot create \(logPath)") }
        process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        process.arguments = ["worker", "--config", f.appsFile, "--amqp-url", f.vhostURL, "--prefix", f.topology.prefix,
                             "--retry-tiers", f.topology.retryTiers.map { String($0.delaySeconds) }.joined(separator: ","),
                             "--fcm-url", f.emulator.baseURL, "--no-declare"] + extra
        process.environment = ["PATH": "/usr/bin:/bin"].merging(environment) { $1 }
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
    }

    deinit { if process.isRunning { process.terminate(); process.waitUntilExit() } }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and waits (at most `timeout`) for the exit; the exit status, nil if it hung.
    func terminate(within timeout: Duration) async throws -> Int32? {
        kill(process.processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { return nil }
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }
}
