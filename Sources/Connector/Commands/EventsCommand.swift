import AMQP
import Foundation
import PushCore

/// `push-connector events`: the event ingestion endpoint and the events consumer into SQLite.
public struct EventsCommand: Command {
    public static let spec = CommandSpec(
        name: "events",
        valueOptions: CommonOptions.broker.union(CommonOptions.resultsRetention).union([
            "--config", "--http", "--db", "--event-keys", "--http-threads", "--publishers", "--batch-size", "--batch-delay-ms",
            "--prefetch", "--log-level", "--max-connections", "--max-connections-per-ip", "--request-deadline-s",
        ]),
        flags: ["--no-consume", "--no-http", "--no-declare"],
        usage: """
        usage: push-connector events --http HOST:PORT --db FILE [--config APPS.json] [options]

        Serves POST /event, POST /events ({"events":[...]}, at most 500), GET /healthz and GET /metrics;
        every accepted event is published to <prefix>.events and confirmed before the 202. Consumes
        <prefix>.events (acks after COMMIT) and reads the stream <prefix>.results.stream (its offset
        stored in the same transaction, resumed from after a restart) into the SQLite database FILE
        (WAL, batched transactions), idempotently. Read it with `push-connector stats`.

        \(CommonOptions.brokerUsage)
        \(CommonOptions.resultsRetentionUsage)
          --http HOST:PORT      where to listen (IPv4), e.g. 0.0.0.0:8080
          --db FILE             SQLite database to store sends and events in
          --config FILE         App ID file: events naming another app_id are refused (400 UNKNOWN_APP)
          --event-keys FILE     {"keys": {"<app_id>": "<key of 16+ bytes>"}}: events must name an app_id
                                and carry its key in the X-Push-Event-Key header (else 401)
          --no-consume          only the endpoint (several replicas may run behind a load balancer)
          --no-http             only the consumer
          --http-threads N      server threads (default 2)
          --max-connections N   open HTTP connections at most (default: the nofile limit minus 128, at most 4096)
          --max-connections-per-ip N
                                open HTTP connections from one address at most (default 64; 0: no limit)
          --request-deadline-s N
                                a whole request must arrive within N seconds, else the connection is cut (default 30)
          --publishers N        broker connections publishing events (default 2)
          --batch-size N        records per transaction (default 500)
          --batch-delay-ms N    wait at most this long for a batch to fill (default 50)
          --prefetch N          unacked deliveries per queue (default 2000)
          --no-declare          do not declare the topology
          --log-level LEVEL     debug | info | warn | error (default info)
        """)

    let arguments: ParsedArguments

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        if arguments.has("--no-http") && arguments.has("--no-consume") {
            throw UsageError("events: --no-http and --no-consume together leave nothing to do")
        }
        if !arguments.has("--no-http") { _ = try arguments.required("--http", in: "events") }
        if !arguments.has("--no-consume") { _ = try arguments.required("--db", in: "events") }
        self.arguments = arguments
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let a = arguments
        let settings = try CommonOptions.brokerSettings(a, context, command: "events")
        let topology = try CommonOptions.topology(a, command: "events")
        var configuration = EventsService.Configuration(settings: settings, topology: topology)
        if !a.has("--no-http") {
            var http = MicroHTTPServer.Configuration()
            (http.host, http.port) = try Self.hostPort(try a.required("--http", in: "events"))
            http.threads = try a.integer("--http-threads", in: "events", default: 2, range: 1...64)
            http.connectionLimit = try a.integer("--max-connections", in: "events", default: http.connectionLimit, range: 1...1_000_000)
            http.perIPConnectionLimit = try a.integer("--max-connections-per-ip", in: "events", default: 64, range: 0...1_000_000)
            http.requestDeadline = .seconds(try a.integer("--request-deadline-s", in: "events", default: 30, range: 1...3600))
            configuration.http = http
        }
        if !a.has("--no-consume") { configuration.databasePath = try a.required("--db", in: "events") }
        if let path = a.value("--config") { configuration.knownApps = Set(try AppConfigurationFile.load(path).appIDs) }
        if let path = a.value("--event-keys") { configuration.keys = try EventKeys.load(path) }
        configuration.publisherConnections = try a.integer("--publishers", in: "events", default: 2, range: 1...32)
        configuration.batchSize = try a.integer("--batch-size", in: "events", default: 500, range: 1...10_000)
        configuration.batchDelay = .milliseconds(try a.integer("--batch-delay-ms", in: "events", default: 50, range: 0...10_000))
        configuration.prefetch = UInt16(try a.integer("--prefetch", in: "events", default: 2000, range: 1...65_535))
        let logger = Logger(component: "events", minimumLevel: try LogLevelOption.parse(a, command: "events"))
        if !a.has("--no-declare") {
            let legacy = try declare(topology, settings: settings)
            if !legacy.found.isEmpty { logger.warning(legacy.advice(topology)) }
        }

        let service: EventsService
        do {
            service = try EventsService(configuration: configuration, logger: logger)
        } catch {
            throw CommandFailure("events: \(error)")
        }
        let shutdown = ShutdownSignal()
        shutdown.installSignalHandlers(logger: logger)
        await service.run(until: shutdown)
        return 0
    }

    /// `HOST:PORT` (IPv4 host).
    static func hostPort(_ text: String) throws(UsageError) -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw UsageError("events: --http must be HOST:PORT, got \"\(text)\"")
        }
        let host = String(text[..<colon])
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }
}
