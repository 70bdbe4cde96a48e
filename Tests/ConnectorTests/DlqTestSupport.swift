import AMQP
import FCM
import Foundation
import PushCore
import Testing
@testable import Connector

/// Helpers for the DLQ tests: seed the DLQ directly, read queues in order, CLI arguments.
extension PipelineFixture {
    /// `--amqp-url … --prefix …` for the CLI.
    var cliBroker: [String] { ["--amqp-url", broker.url, "--prefix", topology.prefix] }

    /// Publishes messages straight into the DLQ, in order, with confirms.
    func seedDLQ(_ messages: [(body: Data, properties: MessageProperties)]) throws {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        for m in messages {
            try client.publishConfirmed(exchange: "", routingKey: topology.deadLetterQueue, body: m.body,
                                        properties: m.properties, mandatory: true)
        }
    }

    /// Takes (acks) every message of `queue`, in queue order.
    func drain(_ queue: String) throws -> [Delivery] {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        var taken: [Delivery] = []
        while let d = try client.get(queue: queue) {
            try client.ack(d.deliveryTag)
            taken.append(d)
        }
        return taken
    }

    /// Waits until `queue` holds `count` ready messages.
    func waitForCount(_ queue: String, _ count: Int, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while try messageCount(queue) != count {
            guard ContinuousClock.now < deadline else {
                throw FixtureError("\(queue) holds \(try messageCount(queue)) messages, not \(count), after \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// A worker like `makeWorker()`, but with another App ID file (the operator's fix).
    func makeWorker(appsFile path: String) throws -> SendWorker {
        let registry = try AppConfigurationFile.load(path)
        var fcm = FCMClient.Configuration()
        fcm.baseURL = emulator.baseURL
        fcm.transport.requestTimeout = .seconds(10)
        let sender = try FCMPushSender(client: FCMClient(configuration: fcm), registry: registry)
        var configuration = SendWorker.Configuration(settings: settings, topology: topology)
        configuration.reconnectBackoff = (.milliseconds(100), .seconds(1))
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(1))
        let processor = JobProcessor(registry: registry, sender: sender, topology: topology, planner: JobPlanner(policy: policy))
        return SendWorker(configuration: configuration, processor: processor, logger: Logger(component: "test-worker", minimumLevel: .warning))
    }
}

/// A DLQ message as the worker writes it.
func deadLetter(_ id: String, app: String = "shop-android", code: String = "UNKNOWN_APP", failedSecondsAgo: Double = 60,
                replays: Int64 = 0, campaign: String? = nil) -> (body: Data, properties: MessageProperties) {
    let when = Timestamp(secondsSince1970: Date().timeIntervalSince1970 - failedSecondsAgo).description
    let extra = campaign.map { #","campaign":"\#($0)""# } ?? ""
    let headers: AMQPTable = [
        DeadLetterHeader.code: .string(code), DeadLetterHeader.message: "test failure", DeadLetterHeader.attempts: 1,
        DeadLetterHeader.firstFailedAt: .string(when), DeadLetterHeader.lastFailedAt: .string(when),
        DeadLetterHeader.replays: .int(replays), DeadLetterHeader.retryAttempt: 2,
    ]
    return (Data(jobJSON(id, tokens: ["dev-\(id)"], app: app, extra: extra).utf8),
            MessageProperties(contentType: "application/json", headers: headers, persistent: true))
}

/// Job ids of messages, in order (nil for bodies that are not jobs).
func jobIDs(_ deliveries: [Delivery]) -> [String?] {
    deliveries.map { DeadLetterEntry(body: $0.body, headers: $0.properties.headers).jobID }
}

/// Job ids printed by `dlq list --json`.
func listedJobIDs(_ out: String) throws -> [String] {
    try out.split(separator: "\n").map { try JSONValue.parse(String($0))["job_id"]?.stringValue ?? "?" }
}
