import AMQP
import CLIKit
import ConfigurationFiles
import FCM
import FoundationEssentials
import Glibc
import HTTPServer
import PushCore
import OSThread
import PushWorker
import ServiceRuntime

/// `push-connector worker`: consumes send jobs, dispatches to FCM, publishes results, retries
/// and dead-letters, until SIGTERM / SIGINT.
public struct WorkerCommand: Command {
    public static let spec = CommandSpec(
        name: "worker", synopsis: "--config APPS.json [options]",
        about: """
        Consumes send jobs from <prefix>.jobs, composes and sends them through FCM HTTP v1, publishes
        one result per recipient, retries transient failures through the retry tiers and dead-letters
        what cannot succeed. Declares the topology at start (unless --no-declare). SIGTERM / SIGINT:
        stop consuming, finish in-flight work within --shutdown-deadline, confirm, ack, exit 0.
        SIGHUP, or a change of the App ID file or a credentials file on disk (polled every
        --config-poll seconds): reload them (a bad file is refused and logged; the previous
        configuration keeps serving).
        """,
        options: [
            .value(.config, "FILE", "App ID file (credentials_file paths are relative to its directory)", .nonEmpty),
            .value(.configPoll, "DURATION", "look for a changed App ID or credentials file this often (0: only on SIGHUP)",
                   default: "5s", .seconds(0...3600)),
        ] + CommonOptions.brokerOptions + CommonOptions.fcmOptions + CommonOptions.resultsRetentionOptions + [
            .value(.prefetch, "N", "unacked jobs per lane at most (default: --max-in-flight / --lanes, so that latency\n"
                   + "does not cap the sends in flight; a job holds its slot until its results are confirmed)",
                   .integer(1...65_535)),
            .value(.prefetchBytes, "N", "bytes of unacked jobs a lane aims to hold: its prefetch starts where jobs of\n"
                   + "--max-job-bytes fit, then follows the jobs' size, up to --prefetch (0, the default: a fixed\n"
                   + "--prefetch; \(SendWorker.suggestedPrefetchBytes) suits queues of large jobs)",
                   default: "0", .integer(0...(1 << 30))),
            .value(.lanes, "N", "lanes, each an event loop on a thread of its own with its own consumer, publisher and\n"
                   + "HTTP/2 connections (auto: one per processor the process may use, after its CPU affinity\n"
                   + "and cgroup quota, at most \(SendWorker.mostAutomaticLanes))", default: "auto",
                   ValueKind { $0 == "auto" || (Int($0).map { (1...64).contains($0) } ?? false) ? nil : "must be auto or a whole number from 1 to 64" }),
            .value(.maxAttempts, "N", "attempts before RETRIES_EXHAUSTED", default: "8", .integer(1...100)),
            .value(.retryBaseDelay, "DURATION", "first backoff delay (doubles each attempt, ±20 % jitter)",
                   default: "5s", .seconds(1...86_400)),
            .value(.maxAge, "DURATION", "dead-letter a job failing for longer than this", default: "24h", .seconds(1...2_592_000)),
            .value(.shutdownDeadline, "DURATION", "time to finish in-flight work on SIGTERM", default: "30s", .seconds(0...3600)),
            .value(.maxJobBytes, "N", "larger job bodies are dead-lettered unparsed as INVALID_JOB",
                   default: String(JobProcessor.defaultMaxJobBytes), .integer(1_024...(64 << 20))),
            .value(.slowAnswer, "DURATION", "a Firebase project answering slower than this (smoothed), or not at all for this long,\n"
                   + "is slow: its sends over its own in-flight limit wait in the retry tiers, without using\n"
                   + "attempts, so that it cannot hold the others' sends; raise it when FCM is far away", default: "500ms",
                   .milliseconds(50...60_000)),
            .value(.quotaRefresh, "DURATION", "count the job queue's consumers this often and take this process's share of "
                   + "each project's quota; a 429 pauses the project on every worker (0: alone, no sharing)", default: "5s", .seconds(0...3600)),
            .value(.urgentInFlight, "N", "FCM requests reserved for high-priority jobs (the urgent queue <prefix>.jobs.high),\n"
                   + "on top of --max-in-flight; also the urgent lane's prefetch", default: "100", .integer(1...10_000)),
            .value(.minQuotaPause, "DURATION", "shortest pause of a project after a 429, whatever its Retry-After", default: "60s",
                   .seconds(1...3600)),
            .value(.http, "HOST:PORT", "serve /healthz, /readyz and /metrics there (default: off)", .hostPort),
            CommonOptions.logLevel,
            CommonOptions.logFormat,
            .flag(.noDeclare, "do not declare the topology (it is managed elsewhere: topology declare)"),
            CommonOptions.check,
        ])

    let arguments: ParsedArguments
    public static var checksItself: Bool { true }

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        _ = try arguments.required(.config, in: "worker")
        self.arguments = arguments
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let plan = try WorkerPlan(arguments, context)
        if arguments.has(.check) {
            let problems = AppConfigurationFile.credentialProblems(plan.registry, path: plan.configPath,
                                                                   allowInsecureHTTP: plan.fcm.allowInsecureHTTP, environment: plan.environment)
                + [CheckReport.caFileProblem(plan.fcm.transport.caFile, option: .caFile, command: "worker"),
                   CheckReport.caFileProblem(plan.settings.tls?.caFile, option: .amqpCAFile, command: "worker")].compactMap { $0 }
            guard problems.isEmpty else { throw CommandFailure(problems.joined(separator: "\n"), exitCode: 2) }
            context.console.out(plan.summary(arguments))
            return 0
        }
        let logger = Logger(component: "worker", minimumLevel: plan.logLevel, format: plan.logFormat)
        let metrics = WorkerMetrics()
        var observed = plan.fcmWithReserve
        observed.observer = FCMWatch(metrics: metrics, log: logger)
        let client = FCMClient(configuration: observed)
        defer { client.shutdown() }
        let catalog = AppCatalog(.init(registry: plan.registry, sender: try FCMPushSender(client: client, registry: plan.registry, environment: plan.environment)))
        if plan.declareTopology {
            let (report, legacy) = try declare(plan.topology, settings: plan.settings)
            log(report, to: logger)
            if !legacy.found.isEmpty { logger.warning(legacy.advice(plan.topology)) }
        } else {
            try verify(plan.topology, settings: plan.settings)
        }

        let control = FleetControl(settings: plan.settings, topology: plan.topology, logger: logger)
        do {
            try await control.catchUp()
        } catch {
            throw CommandFailure("worker: cannot read the control log \(plan.topology.controlLog) on \(plan.settings.redactedURL) "
                + "(declare the topology: push-connector topology declare): \(error)")
        }
        metrics.observe(control: control)
        var processor = JobProcessor(catalog: catalog, topology: plan.topology, planner: JobPlanner(policy: plan.policy))
        processor.control = control
        processor.maxJobBytes = plan.maxJobBytes
        processor.sendWindow = PermitPool(capacity: plan.fcm.transport.maxInFlight)
        processor.jobAdmission = PermitPool(capacity: 2 * plan.fcm.transport.maxInFlight)
        let worker = SendWorker(configuration: plan.worker, processor: processor, logger: logger, metrics: metrics)
        var urgentProcessor = processor
        urgentProcessor.urgent = true
        urgentProcessor.sendWindow = PermitPool(capacity: plan.urgentInFlight)
        urgentProcessor.jobAdmission = PermitPool(capacity: 2 * plan.urgentInFlight)
        let urgentLane = SendWorker(configuration: plan.urgentWorker, processor: urgentProcessor, logger: logger, metrics: metrics)
        metrics.observe(status: worker.status, rateLimiter: client.rateLimiter, concurrency: client.concurrency)
        let fleet = plan.quotaRefresh.map { interval in
            var configuration = FleetQuota.Configuration(settings: plan.settings, topology: plan.topology, lanes: plan.worker.lanes)
            configuration.refreshInterval = interval
            return FleetQuota(configuration: configuration, rateLimiter: client.rateLimiter, status: worker.status,
                              metrics: FleetQuotaMetrics(metrics), logger: logger)
        }
        let server = try plan.http.map { address throws(CommandFailure) in
            var http = MicroHTTPServer.Configuration()
            (http.host, http.port, http.threads, http.connectionLimit) = (address.host, address.port, 1, 64)
            do {
                return try MicroHTTPServer(configuration: http, handler: WorkerEndpoints.handler(for: worker))
            } catch {
                throw CommandFailure("worker: --http: \(error)")
            }
        }
        let shutdown = ShutdownSignal()
        shutdown.installSignalHandlers(logger: logger)
        let (configPath, environment) = (plan.configPath, plan.environment)
        SignalHandlers.on(SIGHUP) {
            Self.reload(configPath, environment: environment, into: catalog, client: client, metrics: metrics, logger: logger)
        }
        let watcher = plan.configPoll.map { interval in
            ConfigurationWatcher(path: configPath, interval: interval) {
                Self.reload(configPath, environment: environment, into: catalog, client: client, metrics: metrics, logger: logger)
            }.start()
        }
        defer { watcher?.cancel() }
        logger.info("worker starting", ["apps": "\(plan.registry.apps.count)", "fcm": plan.fcm.baseURL,
                                        "broker": plan.settings.redactedURL, "lanes": "\(plan.worker.lanes)",
                                        "http": server.map { "\(plan.http?.host ?? ""):\($0.port)" } ?? "off",
                                        "version": BuildInfo.version])
        // The endpoint outlives the drain: /readyz and /metrics answer while the lanes settle.
        var services: [(name: String, service: any Service)] = [("campaign lanes", worker), ("urgent lane", urgentLane),
                                                                ("control log", control)]
        if let fleet { services.append(("fleet quota", fleet)) }
        let ending = await ServiceGroup(services, afterDrain: [{ await server?.stop() }]).run(until: shutdown)
        guard case .endedEarly(let part) = ending else { return 0 }
        logger.error("a part of the worker ended on its own; the others were drained and stopped", ["part": part])
        return 1
    }
}

extension WorkerCommand {
    /// SIGHUP or a change on disk: reads the App ID file and the credentials again; a bad file
    /// is refused (logged) and the worker keeps serving the previous configuration.
    static func reload(_ path: String, environment: [String: String], into catalog: AppCatalog, client: FCMClient,
                       metrics: WorkerMetrics, logger: Logger) {
        do {
            let registry = try AppConfigurationFile.load(path)
            catalog.replace(with: .init(registry: registry,
                                        sender: try FCMPushSender(client: client, registry: registry, environment: environment)))
            metrics.reloadsSucceeded.increment()
            logger.info("configuration reloaded", ["apps": registry.appIDs.joined(separator: ",")])
        } catch {
            metrics.reloadsFailed.increment()
            logger.error("configuration reload refused; keeping the previous one", ["error": "\(error)"])
        }
    }
}

/// Declares the topology once, with a one-line error on failure; returns what the declaration
/// found (the broker's features, queues kept as an earlier version declared them) and the quorum
/// results queues of an earlier version (to be migrated).
@discardableResult
func declare(_ topology: Topology, settings: AMQPSettings) throws(CommandFailure) -> (report: DeclarationReport, legacy: LegacyResultsQueues) {
    do {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        let report = try topology.declare(on: client)
        return (report, try LegacyResultsQueues.find(topology, client: client))
    } catch {
        throw CommandFailure("cannot declare the topology on \(settings.redactedURL): \(error)")
    }
}

/// Logs what a declaration decided from the broker's version (info) and each queue it kept as
/// an earlier version declared it (warning).
func log(_ report: DeclarationReport, to logger: Logger) {
    for (index, note) in report.notes.enumerated() {
        if index == 0 { logger.info(note) } else { logger.warning(note) }
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
