import AMQP
import CLIKit
import ConfigurationFiles
import EventStorage
import FoundationEssentials
import HTTPServer
import PushCore
import PushEvents
import ServiceRuntime

/// `push-connector events`: the event ingestion endpoint and the events consumer into SQLite or
/// PostgreSQL.
public struct EventsCommand: Command {
    public static let spec = CommandSpec(
        name: "events", synopsis: "--http HOST:PORT --db FILE|URL [--config APPS.json] [options]",
        about: """
        Serves POST /event, POST /events ({"events":[...]}, at most 500), GET /healthz, /readyz and /metrics;
        every accepted event is published to <prefix>.events and confirmed before the 202. Consumes
        <prefix>.events (acks after COMMIT) and reads the stream <prefix>.results.stream (its offset
        stored in the same transaction per consumer group, resumed from after a restart) into the SQLite
        database FILE (WAL) or the PostgreSQL database at URL (postgres://…; several consumers may share
        it), in batched transactions, idempotently. Read it with `push-connector stats`.
        """,
        options: CommonOptions.brokerOptions + CommonOptions.resultsRetentionOptions + [
            .value(.http, "HOST:PORT", "where to listen, e.g. 0.0.0.0:8080, [::]:8080 (IPv6 and IPv4) or [::1]:8080", .hostPort),
            .value(.adminHTTP, "HOST:PORT", "serve /healthz, /readyz and /metrics here instead of on --http\n"
                + "(keep them off the public listener), e.g. 127.0.0.1:9091", .hostPort),
            .value(.db, "FILE|URL", "SQLite file, or postgres://user:password@host:port/database, to store sends and events in",
                   .nonEmpty, secret: true),
            .value(.consumerGroup, "NAME", "the name the results-stream offset is stored under; consumers sharing a\n"
                + "database in one group each read the whole stream and store it once", default: "events", .nonEmpty),
            .value(.config, "FILE", "App ID file: events naming another app_id are refused (400 UNKNOWN_APP)", .nonEmpty),
            .value(.eventKeys, "FILE", "{\"keys\": {\"<app_id>\": \"<key of 16+ bytes>\"}}: events must name an app_id\n"
                + "and carry its key in the X-Push-Event-Key header (else 401)", .nonEmpty),
            .flag(.noConsume, "only the endpoint (several replicas may run behind a load balancer)"),
            .flag(.noHTTP, "only the consumer"),
            .value(.httpThreads, "N", "server threads", default: "2", .integer(1...64)),
            .value(.maxConnections, "N", "open HTTP connections at most (default: the nofile limit minus 128, at most 4096)",
                   .integer(1...1_000_000)),
            .value(.maxConnectionsPerIP, "N", "open HTTP connections from one address at most (0: no limit)",
                   default: "64", .integer(0...1_000_000)),
            .value(.requestDeadline, "DURATION", "a whole request must arrive within this long, else the connection is cut",
                   default: "30s", .seconds(1...3600)).formerly("--request-deadline-s"),
            .value(.publishers, "N", "broker connections publishing events", default: "2", .integer(1...32)),
            .value(.batchSize, "N", "records per transaction", default: "500", .integer(1...10_000)),
            .value(.batchDelay, "DURATION", "wait at most this long for a batch to fill", default: "50ms", .milliseconds(0...10_000))
                .formerly("--batch-delay-ms") { Int($0) != nil ? $0 + "ms" : $0 },
            .value(.prefetch, "N", "unacked deliveries per queue", default: "2000", .integer(1...65_535)),
            .flag(.noDeclare, "do not declare the topology"),
            CommonOptions.logLevel,
            CommonOptions.logFormat,
            CommonOptions.check,
        ])

    let arguments: ParsedArguments
    public static var checksItself: Bool { true }

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        if arguments.has(.noHTTP) && arguments.has(.noConsume) {
            throw UsageError("events: --no-http and --no-consume together leave nothing to do")
        }
        if !arguments.has(.noHTTP) { _ = try arguments.required(.http, in: "events") }
        if !arguments.has(.noConsume) { _ = try arguments.required(.db, in: "events") }
        self.arguments = arguments
    }

    /// Everything `events` runs with, resolved without connecting anywhere.
    func configuration(_ context: CommandContext) throws -> EventsService.Configuration {
        let a = arguments
        let settings = try CommonOptions.brokerSettings(a, context, command: "events")
        let topology = try CommonOptions.topology(a, command: "events")
        var configuration = EventsService.Configuration(settings: settings, topology: topology)
        if !a.has(.noHTTP), let address = HostPort(try a.required(.http, in: "events")) {
            var http = MicroHTTPServer.Configuration()
            (http.host, http.port) = (address.host, address.port)
            http.threads = a.integer(.httpThreads)
            http.connectionLimit = a.int(.maxConnections) ?? http.connectionLimit
            http.perIPConnectionLimit = a.integer(.maxConnectionsPerIP)
            http.requestDeadline = .seconds(a.requiredSeconds(.requestDeadline))
            configuration.http = http
        }
        if let admin = a[.adminHTTP].flatMap(HostPort.init) {
            var adminHTTP = MicroHTTPServer.Configuration()
            (adminHTTP.host, adminHTTP.port, adminHTTP.threads) = (admin.host, admin.port, 1)
            configuration.adminHTTP = adminHTTP
        }
        if !a.has(.noConsume) { configuration.database = EventsDatabase(try a.required(.db, in: "events")) }
        configuration.consumerGroup = try a.required(.consumerGroup, in: "events")
        if let path = a[.config] {
            let registry = try AppConfigurationFile.load(path)
            configuration.knownApps = Set(registry.appIDs)
            configuration.origins = EventOrigins(registry)
        }
        if let path = a[.eventKeys] { configuration.keys = try EventKeys.load(path) }
        configuration.publisherConnections = a.integer(.publishers)
        configuration.batchSize = a.integer(.batchSize)
        configuration.batchDelay = .milliseconds(a.requiredMilliseconds(.batchDelay))
        configuration.prefetch = UInt16(a.integer(.prefetch))
        return configuration
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let configuration = try configuration(context)
        if arguments.has(.check) {
            try check(configuration, context)
            return 0
        }
        let logger = Logger(component: "events", minimumLevel: CommonOptions.logLevel(arguments), format: CommonOptions.logFormat(arguments))
        if !arguments.has(.noDeclare) {
            let (report, legacy) = try declare(configuration.topology, settings: configuration.settings)
            log(report, to: logger)
            if !legacy.found.isEmpty { logger.warning(legacy.advice(configuration.topology)) }
        }

        let service: EventsService
        do {
            service = try EventsService(configuration: configuration, logger: logger)
        } catch {
            throw CommandFailure("events: \(error)")
        }
        let shutdown = ShutdownSignal()
        shutdown.installSignalHandlers(logger: logger)
        guard case .endedEarly = await ServiceGroup([("events service", service)]).run(until: shutdown) else { return 0 }
        logger.error("the events service ended on its own")
        return 1
    }

    /// `--check`: the files beyond what option parsing checked, then what would run.
    private func check(_ c: EventsService.Configuration, _ context: CommandContext) throws(CommandFailure) {
        let problems = [
            CheckReport.caFileProblem(c.settings.tls?.caFile, option: .amqpCAFile, command: "events"),
            c.database.flatMap { $0.configurationProblem(option: OptionKey.db.rawValue, command: "events") },
        ].compactMap { $0 }
        guard problems.isEmpty else { throw CommandFailure(problems.joined(separator: "\n"), exitCode: 2) }
        var lines = ["events: configuration OK (checked without connecting to anything)", "options:"]
        lines += CheckReport.optionLines(arguments)
        lines.append("would: \(arguments.has(.noDeclare) ? "not declare" : "declare") the topology (prefix \(c.topology.prefix)) "
            + "on \(c.settings.redactedURL),")
        lines.append("  " + (c.http.map { "serve POST /event(s), /healthz, /readyz, /metrics on \($0.host):\($0.port)" } ?? "serve no HTTP")
            + ", " + (c.database.map { "store \(c.topology.eventsQueue) and \(c.topology.resultsStream) into \($0) (group \(c.consumerGroup))" }
                      ?? "consume nothing")
            + (c.knownApps.map { ", accept App IDs \($0.sorted().joined(separator: ","))" } ?? "")
            + (c.keys == nil ? "" : ", require event keys"))
        context.console.out(lines.joined(separator: "\n"))
    }
}
