import AMQP
import BrokerHarness
@testable import ConfigurationFiles
import EmulatorKit
import FCM
import Foundation
import PushCore
@testable import PushWorker
@testable import ServiceRuntime
import Synchronization
import Testing
@testable import Connector
import OSThread

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
    let ownVhost: Bool
    /// Queues a test declared besides the topology (deleted with it).
    private let extraQueues = Mutex<[String]>([])
    /// The test's reader of the results stream (`results(_:timeout:)`).
    let resultsTap: ResultsTap

    /// - Parameters:
    ///   - ownVhost: isolate in a fresh vhost (for tests that close connections).
    ///   - retryTiers: delay tiers in seconds (short ones keep retry tests fast).
    ///   - broker: a node of the test's own (`TestBroker.dedicated()`); the shared one by default.
    init(ownVhost: Bool = false, retryTiers: [Int] = [1], broker: TestBroker? = nil,
         configureEmulator: (inout EmulatorConfiguration) -> Void = { _ in }) async throws {
        if let broker { self.broker = broker } else { self.broker = try await TestBroker.shared() }
        self.ownVhost = ownVhost
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
        resultsTap = ResultsTap(settings: settings, stream: topology.resultsStream)
    }

    /// Stops the emulator and removes what the test left on the shared node: its vhost, or its
    /// queues and exchanges (so hundreds of quorum queues do not pile up over a run), and its
    /// folder. Cleanup failures are reported on stderr; they do not fail the test.
    deinit {
        emulator.stop()
        let tap = resultsTap
        Task { await tap.close() }
        do {
            if ownVhost {
                try broker.deleteVhost(settings.vhost)
            } else {
                try broker.deleteTopology(topology, extraQueues: extraQueues.withLock { $0 }, settings: settings)
            }
        } catch {
            try? FileHandle.standardError.write(contentsOf: Data("PipelineFixture cleanup of \(topology.prefix) failed: \(error)\n".utf8))
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Declares a durable queue bound to `exchange` with `routingKey` (e.g. to watch what the
    /// worker publishes there); it is deleted with the fixture.
    func declareObserver(_ name: String, exchange: String, routingKey: String) throws -> String {
        let queue = "\(topology.prefix).observe.\(name)"
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.declareQueue(queue)
        try client.bindQueue(queue, exchange: exchange, routingKey: routingKey)
        extraQueues.withLock { $0.append(queue) }
        return queue
    }

    /// A worker wired like `push-connector worker`, not yet running.
    /// `fcmPath` is appended to the emulator's URL (a wrong path simulates a misconfigured `--fcm-url`).
    /// `admission` overrides the job admission (`worker`: twice `--max-in-flight` recipients).
    /// `overTLS`: the worker reaches the broker through its TLS listener (amqps://).
    func makeWorker(maxAttempts: Int = 3, prefetch: UInt16 = 50, lanes: Int = 1, overTLS: Bool = false,
                    shutdownDeadline: Duration = .seconds(10), fcmPath: String = "", admission: Int? = nil,
                    configureFCM: (inout FCMClient.Configuration) -> Void = { _ in }) throws -> SendWorker {
        var fcm = FCMClient.Configuration()
        fcm.baseURL = emulator.baseURL + fcmPath
        fcm.transport.requestTimeout = .seconds(10)
        configureFCM(&fcm)
        let metrics = WorkerMetrics()
        fcm.observer = FCMWatch(metrics: metrics, log: Logger(component: "test-worker", minimumLevel: .warning))
        let client = FCMClient(configuration: fcm)
        let sender = try FCMPushSender(client: client, registry: registry)
        let policy = RetryPolicy(maxAttempts: maxAttempts, baseDelay: .seconds(1), maxDelay: .seconds(1))
        let brokerSettings = overTLS ? try broker.tlsSettings(connectionName: PipelineFixture.tlsConnectionName) : settings
        var configuration = SendWorker.Configuration(settings: brokerSettings, topology: topology)
        configuration.prefetch = prefetch
        configuration.lanes = lanes
        configuration.shutdownDeadline = shutdownDeadline
        configuration.reconnectBackoff = Backoff(initial: .milliseconds(100), max: .seconds(1))
        var processor = JobProcessor(registry: registry, sender: sender, topology: topology, planner: JobPlanner(policy: policy))
        processor.sendWindow = PermitPool(capacity: fcm.transport.maxInFlight)  // as `worker` runs
        processor.jobAdmission = PermitPool(capacity: admission ?? 2 * fcm.transport.maxInFlight)
        let worker = SendWorker(configuration: configuration, processor: processor,
                                logger: Logger(component: "test-worker", minimumLevel: .warning), metrics: metrics)
        metrics.observe(status: worker.status, rateLimiter: client.rateLimiter)
        return worker
    }

    /// The connection name of a worker made `overTLS`.
    static let tlsConnectionName = "push-connector-tls-test"

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

    /// The next `count` results of the results stream (read from `first`; each result is
    /// returned once over the fixture's life), decoded.
    func results(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [SendResult] {
        try await resultsTap.take(count, timeout: timeout).map { try SendResult.decode(JSONValue.parse($0.body)) }
    }

    /// Every result in the stream not returned yet by `results(_:timeout:)`: all it holds now
    /// (results confirmed before this call), decoded. Publishes a marker: not during a memory alarm.
    func remainingResults() async throws -> [SendResult] {
        try await resultsTap.rest().map { try SendResult.decode(JSONValue.parse($0.body)) }
    }

    /// `push-connector events --no-http` on this fixture's topology, storing into `db` (a SQLite
    /// path or a PostgreSQL URL); its log goes to `log` when given.
    func startEventsConsumer(db: String, log: String? = nil) throws -> Process {
        let process = Process()
        if let log {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: log)
        }
        process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        process.arguments = ["events", "--no-http", "--db", db, "--amqp-url", broker.url, "--prefix", topology.prefix,
                             "--retry-tiers", "1", "--no-declare", "--batch-size", "100", "--batch-delay", "5ms", "--log-level", "warn"]
        process.environment = ["PATH": "/usr/bin:/bin"]
        try process.run()
        return process
    }

    func messageCount(_ queue: String) throws -> Int {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        return Int(try client.messageCount(queue: queue))
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
