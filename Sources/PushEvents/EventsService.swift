import AMQP
import EventStorage
import FoundationEssentials
import HTTPServer
import PushCore
import ServiceRuntime

/// `push-connector events` as a library: the ingestion endpoint (optional) and the consumer
/// into SQLite or PostgreSQL (optional), sharing one set of metrics.
public final class EventsService: Service {
    /// What to run and how.
    public struct Configuration: Sendable {
        public var settings: AMQPSettings
        public var topology: Topology
        /// nil: no HTTP endpoint (`--no-http`).
        public var http: MicroHTTPServer.Configuration?
        /// `--admin-http`: a listener of its own for `/healthz`, `/readyz` and `/metrics`, which
        /// the public endpoint then no longer serves. nil: the public endpoint serves them.
        public var adminHTTP: MicroHTTPServer.Configuration?
        /// Which web origins may post events from a browser (the App IDs' `allowed_origins`).
        public var origins = EventOrigins(byApp: [:])
        /// nil: no consumer (`--no-consume`).
        public var database: EventsDatabase?
        /// The consumer group stream offsets are stored under.
        public var consumerGroup = "events"
        public var knownApps: Set<String>?
        public var keys: EventKeys?
        public var publisherConnections = 2
        public var batchSize = 500
        public var batchDelay: Duration = .milliseconds(50)
        public var prefetch: UInt16 = 2000

        public init(settings: AMQPSettings, topology: Topology) {
            self.settings = settings
            self.topology = topology
        }
    }

    public let metrics = EventMetrics()
    public let configuration: Configuration
    private let logger: Logger
    private let server: MicroHTTPServer?
    private let adminServer: MicroHTTPServer?
    private let publisher: EventPublisher?
    private let writer: BatchWriter?
    private let consumer: EventsConsumer?

    /// Opens the database and binds the HTTP port (so that failures surface before `run`).
    public init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        if let database = configuration.database {
            let writer = BatchWriter(store: try database.open(), metrics: metrics, logger: logger,
                                     maxBatch: configuration.batchSize, maxDelay: configuration.batchDelay)
            var c = EventsConsumer.Configuration(settings: configuration.settings, topology: configuration.topology, database: database)
            c.prefetch = configuration.prefetch
            c.consumerGroup = configuration.consumerGroup
            self.writer = writer
            consumer = EventsConsumer(configuration: c, writer: writer, metrics: metrics, logger: logger.child("consumer"))
        } else {
            writer = nil
            consumer = nil
        }
        let publisher = configuration.http.map {
            _ in EventPublisher(settings: configuration.settings, exchange: configuration.topology.eventsExchange,
                                connections: configuration.publisherConnections, logger: logger.child("publisher"))
        }
        self.publisher = publisher
        let health = EventsHealth(publisher: publisher, consumer: consumer, writer: writer, database: configuration.database.map { DatabaseProbe($0) })
        if var http = configuration.http, let publisher {
            http.capturedHeaders += [EventIngestion.keyHeader] + EventIngestion.corsHeaders
            let handler = EventIngestion(publisher: publisher, metrics: metrics, knownApps: configuration.knownApps, keys: configuration.keys,
                                         origins: configuration.origins, servesOperations: configuration.adminHTTP == nil,
                                         health: { await health.problem() })
            server = try MicroHTTPServer(configuration: http, handler: handler)
        } else {
            server = nil
        }
        let metrics = self.metrics
        adminServer = try configuration.adminHTTP.map {
            try MicroHTTPServer(configuration: $0, handler: EventIngestion.operations(metrics: metrics, health: { await health.problem() }))
        }
    }

    /// The HTTP port (nil without HTTP).
    public var httpPort: Int? { server?.port }

    /// The admin listener's port (nil without `--admin-http`).
    public var adminPort: Int? { adminServer?.port }

    /// HTTP connections cut so far because their request missed the deadline.
    public var httpConnectionsCutAtDeadline: Int { server?.connectionsCutAtDeadline ?? 0 }

    /// Serves and consumes until `shutdown`; then stops the endpoint (answering what is in
    /// flight), stops consuming, commits and acks what is held, and closes.
    public func run(until shutdown: ShutdownSignal) async {
        if let port = server?.port { logger.info("listening", ["http": "\(configuration.http?.host ?? ""):\(port)"]) }
        if let port = adminServer?.port { logger.info("admin listening", ["http": "\(configuration.adminHTTP?.host ?? ""):\(port)"]) }
        if let consumer {
            await consumer.run(until: shutdown)
        } else {
            await shutdown.wait()
        }
        await server?.stop()
        await adminServer?.stop()
        await publisher?.close()
        writer?.stop()
        logger.info("events service stopped", ["accepted": "\(metrics.accepted.value)",
                                               "stored": "\(metrics.eventsStored.value)"])
    }
}
