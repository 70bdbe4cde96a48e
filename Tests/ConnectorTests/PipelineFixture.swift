import AMQP
import BrokerHarness
import EmulatorKit
import FCM
import Foundation
import PushCore
import Testing
@testable import Connector

/// A real pipeline for one test: the shared test broker (a unique topology prefix, or a vhost of
/// its own), an in-process fcm-emulator with a throwaway service account, the App ID file, and
/// helpers to publish jobs and read what comes out.
final class PipelineFixture: Sendable {
    static let project = "shop-prod"
    let broker: TestBroker
    let settings: AMQPSettings
    let topology: Topology
    let emulator: FCMEmulator
    let directory: String
    let appsFile: String
    let registry: AppRegistry

    /// - Parameters:
    ///   - ownVhost: isolate in a fresh vhost (for tests that close connections).
    ///   - retryTiers: delay tiers in seconds (short ones keep retry tests fast).
    ///   - broker: a node of the test's own (`TestBroker.dedicated()`); the shared one by default.
    init(ownVhost: Bool = false, retryTiers: [Int] = [1], broker: TestBroker? = nil,
         configureEmulator: (inout EmulatorConfiguration) -> Void = { _ in }) async throws {
        if let broker { self.broker = broker } else { self.broker = try await TestBroker.shared() }
        settings = ownVhost ? try self.broker.makeVhost(heartbeatSeconds: 10) : try self.broker.settings()
        topology = Topology(prefix: self.broker.uniqueName("pc"), retryDelaysSeconds: retryTiers)
        directory = try temporaryDirectory()
        var configuration = EmulatorConfiguration()
        configuration.port = 0
        configuration.retryAfterSeconds = 1
        configureEmulator(&configuration)
        emulator = try FCMEmulator(configuration: configuration)
        try emulator.start()
        // The account's token_uri names the emulator's port, known only now: trust it after start.
        let accountPath = directory + "/sa.json"
        let account = try ServiceAccountFactory.make(projectID: Self.project, clientEmail: ServiceAccountFactory.defaultClientEmail(projectID: Self.project),
                                                     tokenURI: emulator.tokenURL)
        try account.write(toFile: accountPath, atomically: true, encoding: .utf8)
        try emulator.trustServiceAccount(json: account)
        appsFile = directory + "/apps.json"
        try """
        {"apps":[{"app_id":"shop-android","project_id":"\(Self.project)","credentials_file":"\(accountPath)",
          "default_payload":{"pushdata.source":"crm"},
          "extra_options":{"android":{"priority":"high","ttl":"86400s"},"apns":{"headers":{"apns-priority":"10"}},
                           "fcm_options":{"analytics_label":"promo"}}}]}
        """.write(toFile: appsFile, atomically: true, encoding: .utf8)
        registry = try AppConfigurationFile.load(appsFile)
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
    }

    deinit { emulator.stop() }

    /// A worker wired like `push-connector worker`, not yet running.
    func makeWorker(maxAttempts: Int = 3, prefetch: UInt16 = 50, lanes: Int = 1,
                    shutdownDeadline: Duration = .seconds(10)) throws -> SendWorker {
        var fcm = FCMClient.Configuration()
        fcm.baseURL = emulator.baseURL
        fcm.transport.requestTimeout = .seconds(10)
        let sender = try FCMPushSender(client: FCMClient(configuration: fcm), registry: registry)
        let policy = RetryPolicy(maxAttempts: maxAttempts, baseDelay: .seconds(1), maxDelay: .seconds(1))
        var configuration = SendWorker.Configuration(settings: settings, topology: topology)
        configuration.prefetch = prefetch
        configuration.lanes = lanes
        configuration.shutdownDeadline = shutdownDeadline
        configuration.reconnectBackoff = (.milliseconds(100), .seconds(1))
        let processor = JobProcessor(registry: registry, sender: sender, topology: topology, planner: JobPlanner(policy: policy))
        return SendWorker(configuration: configuration, processor: processor, logger: Logger(component: "test-worker", minimumLevel: .warning))
    }

    /// Runs a worker in the background until the returned signal is triggered.
    func startWorker(_ worker: SendWorker) -> (ShutdownSignal, Task<Void, Never>) {
        let shutdown = ShutdownSignal()
        let task = Task { await worker.run(until: shutdown) }
        return (shutdown, task)
    }

    /// Publishes raw bodies to the job exchange with confirms.
    func publish(_ bodies: [String]) async throws {
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        for body in bodies {
            try await publisher.publish(exchange: topology.jobsExchange, routingKey: topology.jobsRoutingKey, body: Data(body.utf8),
                                        properties: MessageProperties(contentType: "application/json", persistent: true))
        }
        await publisher.close()
    }

    func publishBytes(_ body: Data) async throws {
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        try await publisher.publish(exchange: topology.jobsExchange, routingKey: topology.jobsRoutingKey, body: body)
        await publisher.close()
    }

    /// Takes (and acks) `count` messages from `queue`, failing after `timeout`.
    func take(_ count: Int, from queue: String, timeout: Duration = .seconds(30)) async throws -> [Delivery] {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        var taken: [Delivery] = []
        let deadline = ContinuousClock.now + timeout
        while taken.count < count {
            if let d = try client.get(queue: queue) {
                try client.ack(d.deliveryTag)
                taken.append(d)
            } else {
                guard ContinuousClock.now < deadline else {
                    throw FixtureError("only \(taken.count) of \(count) messages arrived on \(queue) within \(timeout)")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        return taken
    }

    /// Results taken from the results queue, decoded.
    func results(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [SendResult] {
        try await take(count, from: topology.resultsQueue, timeout: timeout).map { try SendResult.decode(JSONValue.parse($0.body)) }
    }

    func messageCount(_ queue: String) throws -> Int {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        return Int(try client.messageCount(queue: queue))
    }

    /// A port nothing listens on right now (bound to 127.0.0.1:0, read, closed).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw FixtureError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A job body for `tokens` (one recipient each).
func jobJSON(_ id: String, tokens: [String], app: String = "shop-android", extra: String = "") -> String {
    let recipients = tokens.map { #"{"token":"\#($0)"}"# }.joined(separator: ",")
    return #"{"job_id":"\#(id)","app_id":"\#(app)","notification":{"title":"T","body":"B"},"recipients":[\#(recipients)]\#(extra)}"#
}
