import AMQP
import FCM
import Foundation
import PushCore

/// `push-connector worker`: consumes send jobs, dispatches to FCM, publishes results, retries
/// and dead-letters, until SIGTERM / SIGINT.
public struct WorkerCommand: Command {
    public static let spec = CommandSpec(
        name: "worker",
        valueOptions: CommonOptions.broker.union(CommonOptions.fcm).union(CommonOptions.resultsRetention).union([
            "--config", "--prefetch", "--lanes", "--max-attempts", "--retry-base-delay", "--max-age", "--shutdown-deadline", "--log-level",
            "--max-job-bytes",
        ]),
        flags: CommonOptions.fcmFlags.union(["--no-declare"]),
        usage: """
        usage: push-connector worker --config APPS.json [options]

        Consumes send jobs from <prefix>.jobs, composes and sends them through FCM HTTP v1, publishes
        one result per recipient, retries transient failures through the retry tiers and dead-letters
        what cannot succeed. Declares the topology at start (unless --no-declare). SIGTERM / SIGINT:
        stop consuming, finish in-flight work within --shutdown-deadline, confirm, ack, exit 0.
        SIGHUP: reload the App ID file and credentials (a bad file is refused and logged).

        \(CommonOptions.brokerUsage)
        \(CommonOptions.fcmUsage)
        \(CommonOptions.resultsRetentionUsage)
          --prefetch N          unacked jobs per lane (default 100)
          --lanes N             consumer/publisher connection pairs (default 1; one per core is plenty)
          --max-attempts N      attempts before RETRIES_EXHAUSTED (default 8)
          --retry-base-delay S  first backoff delay in seconds (default 5; doubles each attempt, ±20 % jitter)
          --max-age S           dead-letter a job failing for longer than this (default 86400)
          --shutdown-deadline S seconds to finish in-flight work on SIGTERM (default 30)
          --max-job-bytes N     larger job bodies are dead-lettered unparsed as INVALID_JOB (default 1048576)
          --log-level LEVEL     debug | info | warn | error (default info)
          --no-declare          do not declare the topology (it is managed elsewhere)
        """)

    let arguments: ParsedArguments

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        _ = try arguments.required("--config", in: "worker")
        self.arguments = arguments
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let a = arguments
        let settings = try CommonOptions.brokerSettings(a, context, command: "worker")
        let topology = try CommonOptions.topology(a, command: "worker")
        let fcmConfiguration = try CommonOptions.fcmConfiguration(a, context, command: "worker")
        var policy = RetryPolicy()
        policy.maxAttempts = try a.integer("--max-attempts", in: "worker", default: 8, range: 1...100)
        policy.baseDelay = .seconds(try a.integer("--retry-base-delay", in: "worker", default: 5, range: 1...86_400))
        policy.maxAge = .seconds(try a.integer("--max-age", in: "worker", default: 86_400, range: 1...2_592_000))
        policy.maxDelay = .seconds(topology.retryTiers.last?.delaySeconds ?? 3600)
        var configuration = SendWorker.Configuration(settings: settings, topology: topology)
        configuration.prefetch = UInt16(try a.integer("--prefetch", in: "worker", default: 100, range: 1...65_535))
        configuration.lanes = try a.integer("--lanes", in: "worker", default: 1, range: 1...64)
        configuration.shutdownDeadline = .seconds(try a.integer("--shutdown-deadline", in: "worker", default: 30, range: 0...3600))
        let maxJobBytes = try a.integer("--max-job-bytes", in: "worker", default: JobProcessor.defaultMaxJobBytes, range: 1_024...(64 << 20))
        let logger = Logger(component: "worker", minimumLevel: try LogLevelOption.parse(a, command: "worker"))

        let configPath = try a.required("--config", in: "worker")
        let registry = try AppConfigurationFile.load(configPath)
        let client = FCMClient(configuration: fcmConfiguration)
        defer { client.shutdown() }
        let catalog = AppCatalog(.init(registry: registry, sender: try FCMPushSender(client: client, registry: registry)))
        if a.has("--no-declare") { try verify(topology, settings: settings) } else {
            let legacy = try declare(topology, settings: settings)
            if !legacy.found.isEmpty { logger.warning(legacy.advice(topology)) }
        }

        var processor = JobProcessor(catalog: catalog, topology: topology, planner: JobPlanner(policy: policy))
        processor.maxJobBytes = maxJobBytes
        let worker = SendWorker(configuration: configuration, processor: processor, logger: logger)
        let shutdown = ShutdownSignal()
        shutdown.installSignalHandlers(logger: logger)
        SignalHandlers.on(SIGHUP) { Self.reload(configPath, into: catalog, client: client, logger: logger) }
        logger.info("worker starting", ["apps": "\(registry.apps.count)", "fcm": fcmConfiguration.baseURL,
                                        "broker": settings.redactedURL, "lanes": "\(configuration.lanes)"])
        await worker.run(until: shutdown)
        return 0
    }
}

extension WorkerCommand {
    /// SIGHUP: reads the App ID file and the credentials again; a bad file is refused (logged)
    /// and the worker keeps serving the previous configuration.
    static func reload(_ path: String, into catalog: AppCatalog, client: FCMClient, logger: Logger) {
        do {
            let registry = try AppConfigurationFile.load(path)
            catalog.replace(with: .init(registry: registry, sender: try FCMPushSender(client: client, registry: registry)))
            logger.info("configuration reloaded", ["apps": registry.appIDs.joined(separator: ",")])
        } catch {
            logger.error("configuration reload refused; keeping the previous one", ["error": "\(error)"])
        }
    }
}

/// Declares the topology once, with a one-line error on failure; returns the quorum results
/// queues of an earlier version it found (to be migrated).
@discardableResult
func declare(_ topology: Topology, settings: AMQPSettings) throws(CommandFailure) -> LegacyResultsQueues {
    do {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        return try LegacyResultsQueues.find(topology, client: client)
    } catch {
        throw CommandFailure("cannot declare the topology on \(settings.redactedURL): \(error)")
    }
}

/// With `--no-declare`: every queue the worker publishes into must exist, or a retry or
/// dead-letter copy could be confirmed by the broker and dropped unrouted. Refuses to start.
func verify(_ topology: Topology, settings: AMQPSettings) throws(CommandFailure) {
    do {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        for queue in topology.queues {
            do { _ = try client.messageCount(queue: queue.name) } catch {
                throw CommandFailure("queue \(queue.name) does not exist on \(settings.redactedURL): declare the topology "
                    + "(push-connector topology declare, same --prefix and --retry-tiers) or drop --no-declare")
            }
        }
    } catch let failure as CommandFailure {
        throw failure
    } catch {
        throw CommandFailure("cannot reach \(settings.redactedURL): \(error)")
    }
}

/// `--log-level`.
enum LogLevelOption {
    static func parse(_ a: ParsedArguments, command: String) throws(UsageError) -> Logger.Level {
        switch a.value("--log-level") ?? "info" {
        case "debug": return .debug
        case "info": return .info
        case "warn", "warning": return .warning
        case "error": return .error
        case let other: throw UsageError("\(command): --log-level must be debug, info, warn or error, got \"\(other)\"")
        }
    }
}
