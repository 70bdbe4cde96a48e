import AMQP
import CLIKit
import ConfigurationFiles
import FCM
import FoundationEssentials
import PushCore
import PushWorker
import ServiceRuntime

/// Everything `worker` runs with, resolved from its options, the environment, the settings
/// file and the App ID file, without connecting anywhere: what `--check` validates and prints.
struct WorkerPlan {
    var settings: AMQPSettings
    var topology: Topology
    var fcm: FCMClient.Configuration
    var policy: RetryPolicy
    var worker: SendWorker.Configuration
    var maxJobBytes: Int
    var logLevel: Logger.Level
    /// `--log-format`: the logger's line format.
    var logFormat: Logger.Format
    /// `--http HOST:PORT`: where /healthz, /readyz and /metrics are served; nil: not served.
    var http: HostPort?
    var configPath: String
    var registry: AppRegistry
    /// The process's environment (Application Default Credentials read it).
    var environment: [String: String]
    /// How often the App ID file is polled for changes; nil: only SIGHUP reloads it.
    var configPoll: Duration?
    var declareTopology: Bool
    /// `--quota-refresh`: how often the fleet's consumers are counted; nil: no quota sharing.
    var quotaRefresh: Duration?
    /// `--urgent-in-flight`: FCM requests reserved for the urgent lane, on top of `--max-in-flight`.
    var urgentInFlight: Int
    /// The urgent lane: one lane on the urgent queue, its prefetch the reserve.
    var urgentWorker: SendWorker.Configuration

    init(_ a: ParsedArguments, _ context: CommandContext) throws {
        settings = try CommonOptions.brokerSettings(a, context, command: "worker")
        topology = try CommonOptions.topology(a, command: "worker")
        fcm = try CommonOptions.fcmConfiguration(a, context, command: "worker")
        fcm.promptAnswer = .milliseconds(a.requiredMilliseconds(.slowAnswer))
        policy = RetryPolicy()
        policy.maxAttempts = a.integer(.maxAttempts)
        policy.baseDelay = .seconds(a.requiredSeconds(.retryBaseDelay))
        policy.maxAge = .seconds(a.requiredSeconds(.maxAge))
        policy.maxDelay = .seconds(topology.retryTiers.last?.delaySeconds ?? 3600)
        worker = SendWorker.Configuration(settings: settings, topology: topology)
        worker.lanes = a.int(.lanes) ?? SendWorker.automaticLanes(ProcessorBudget.current())
        worker.prefetch = a.int(.prefetch).map(UInt16.init)
            ?? SendWorker.defaultPrefetch(maxInFlight: fcm.transport.maxInFlight, lanes: worker.lanes)
        worker.shutdownDeadline = .seconds(a.requiredSeconds(.shutdownDeadline))
        maxJobBytes = a.integer(.maxJobBytes)
        worker.prefetchBytes = a.integer(.prefetchBytes)
        worker.largestJob = maxJobBytes
        logLevel = CommonOptions.logLevel(a)
        logFormat = CommonOptions.logFormat(a)
        http = a[.http].flatMap(HostPort.init)
        configPath = try a.required(.config, in: "worker")
        registry = try AppConfigurationFile.load(configPath)
        environment = context.environment
        let poll = a.requiredSeconds(.configPoll)
        configPoll = poll > 0 ? .seconds(poll) : nil
        declareTopology = !a.has(.noDeclare)
        let refresh = a.requiredSeconds(.quotaRefresh)
        quotaRefresh = refresh > 0 ? .seconds(refresh) : nil
        fcm.rateLimit.minimumQuotaPause = .seconds(a.requiredSeconds(.minQuotaPause))
        urgentInFlight = a.integer(.urgentInFlight)
        urgentWorker = worker
        urgentWorker.urgent = true
        urgentWorker.lanes = 1
        urgentWorker.prefetchBytes = 0
        urgentWorker.prefetch = UInt16(clamping: urgentInFlight)
    }

    /// The FCM client's configuration: `--max-in-flight` for the lanes plus the urgent reserve,
    /// so that a window full of campaign sends never delays an urgent one.
    var fcmWithReserve: FCMClient.Configuration {
        var configuration = fcm
        configuration.transport.maxInFlight += urgentInFlight
        return configuration
    }

    /// The prefetch as `--check` tells it.
    var prefetchDescription: String {
        worker.prefetchBytes > 0 ? "up to \(worker.prefetch), sized to \(worker.prefetchBytes) bytes of jobs" : "\(worker.prefetch)"
    }

    /// What `--check` prints: the options and their sources, the App IDs, what would run.
    func summary(_ a: ParsedArguments) -> String {
        var lines = ["worker: configuration OK (checked without connecting to anything)", "options:"]
        lines += CheckReport.optionLines(a)
        lines.append("App IDs (\(registry.apps.count)) from \(configPath):")
        for id in registry.appIDs {
            let app = registry[id]!
            let rate = app.rateLimitPerMinute.map { "\($0)/min" + (quotaRefresh == nil ? " in this process" : " shared by the fleet") }
                ?? "FCM default quota" + (quotaRefresh == nil ? "" : ", shared by the fleet")
            let source = (try? AppConfigurationFile.credentials(app, environment: environment, allowInsecureHTTP: fcm.allowInsecureHTTP))?.description ?? "unusable"
            let named = app.credentialsFile.map { "credentials \($0) (key loads)" } ?? "no credentials_file"
            lines.append("  \(id): project \(app.projectID), \(named), tokens from \(source), rate \(rate)")
        }
        lines.append("would: \(declareTopology ? "declare" : "verify") the topology (prefix \(topology.prefix), retry tiers "
            + topology.retryTiers.map { "\($0.delaySeconds)s" }.joined(separator: ",") + ") on \(settings.redactedURL),")
        lines.append("  consume \(topology.jobsQueue) on \(worker.lanes) lane(s) with prefetch \(prefetchDescription), send to \(fcm.baseURL) (\(fcm.transportKind.rawValue)),")
        lines.append("  consume \(topology.urgentJobsQueue) on an urgent lane with \(urgentInFlight) FCM request(s) of its own,")
        lines.append("  " + (quotaRefresh.map { "share each project's quota with the job queue's other consumers (counted every \($0.components.seconds)s), "
            + "announce 429 pauses on \(topology.controlExchange)," } ?? "take each project's whole quota (--quota-refresh 0),")
            + " pause a project at least \(fcm.rateLimit.minimumQuotaPause.components.seconds)s after a 429,")
        lines.append("  serve /healthz /readyz /metrics " + (http.map { "on \($0.host):\($0.port)" } ?? "nowhere (no --http)")
            + ", log \(logFormat.rawValue) at \(logLevel), reload on SIGHUP"
            + (configPoll.map { " and on a file change (polled every \($0.components.seconds)s)" } ?? ""))
        return lines.joined(separator: "\n")
    }
}
