import AMQP
import EventStorage
import FoundationEssentials
import PushCore
import ServiceRuntime
import Synchronization

/// Consumes the events queue and the results stream into the `BatchWriter`. A delivery that
/// cannot be parsed is copied to the events DLQ with `push-error-code` / `push-error-message`
/// headers (confirmed); consuming goes on.
///
/// Events queue: each delivery is acked only after the transaction holding its record
/// committed. Lost connections are reopened with exponential backoff; unacked deliveries come
/// back and are counted once (the store is idempotent). Nothing is ever nacked with requeue (on
/// RabbitMQ 4.x every requeue counts towards a quorum queue's delivery limit): a record whose
/// transaction failed is handed to the writer again, still unacked (the writer backs off after
/// a failed transaction); after `maxStoreAttempts` failures it is copied to the events DLQ with
/// `push-error-code` `STORE_FAILED`, then acked. When even that copy cannot be published,
/// consuming stops and the connection is reopened: the broker returns the unacked delivery then.
///
/// Results stream: read from the offset after the one stored for the consumer group (`first` on
/// the first start); each record is written with its offset in one transaction (`EventStore`).
/// Several consumers of one group each read the whole stream (rows are idempotent; the stored
/// offset only moves forward), so one of them may die without a gap. A failed
/// transaction, or an unparseable result that cannot be copied to the DLQ, ends the stream
/// consumer; it starts again (with backoff) from the stored offset, so nothing is skipped. The
/// stream's acks only return the credit of `prefetch`.
public final class EventsConsumer: Service {
    /// Tunables of the consumer.
    public struct Configuration: Sendable {
        public var settings: AMQPSettings
        public var topology: Topology
        /// Unacked deliveries per queue; keep it at least the batch size.
        public var prefetch: UInt16 = 2000
        public var reconnectBackoff = Backoff(initial: .milliseconds(200), max: .seconds(30))
        /// Failed transactions a record may go through before it is dead-lettered (`STORE_FAILED`).
        public var maxStoreAttempts = 5
        /// The database the writer stores into: where the stream offset is read at each start.
        public var database: EventsDatabase
        /// The consumer group the stream offset is stored under (`--consumer-group`).
        public var consumerGroup = "events"

        public init(settings: AMQPSettings, topology: Topology, database: EventsDatabase) {
            self.settings = settings
            self.topology = topology
            self.database = database
        }
    }

    /// Ends a stream consumer whose records could not all be stored (or copied to the DLQ).
    struct StreamRestart: Error, CustomStringConvertible {
        let description: String
    }

    public let configuration: Configuration
    /// True while both queues are being consumed (for `/healthz`).
    public let isConsuming = Atomic<Bool>(false)
    /// Stream consumer connections so far (`BatchWriter.Pending.generation`).
    private let generations = Atomic<Int>(0)
    private let writer: BatchWriter
    private let metrics: EventMetrics
    private let logger: Logger

    public init(configuration: Configuration, writer: BatchWriter, metrics: EventMetrics, logger: Logger) {
        self.configuration = configuration
        self.writer = writer
        self.metrics = metrics
        self.logger = logger
    }

    /// Consumes until `shutdown`; then lets the writer commit what it holds and acks it.
    public func run(until shutdown: ShutdownSignal) async {
        // A connection that ends in error is a failure too: a database that keeps failing is not hammered.
        let lifecycle = ConnectionLifecycle(backoff: configuration.reconnectBackoff, shutdown: shutdown)
        await lifecycle.run({ try await consumeOnce(lifecycle) }, onFailure: { error, backoff in
            logger.warning("events consumer lost its broker or database, reconnecting", ["error": "\(error)", "in": "\(backoff)"])
        })
    }

    private func consumeOnce(_ lifecycle: ConnectionLifecycle) async throws {
        let t = configuration.topology
        let publisher = try await ConfirmingPublisher.connect(settings: configuration.settings)
        var started: [AMQPConsumer] = []
        let from: StreamOffset
        do {
            // A connection of its own: the writer's belongs to its thread.
            let stored = try configuration.database.open().storedOffset(consumer: configuration.consumerGroup, stream: t.resultsStream)
            from = stored.map { .offset($0 + 1) } ?? .first
            started.append(try await AMQPConsumer.start(settings: configuration.settings, queue: t.eventsQueue, prefetch: configuration.prefetch))
            started.append(try await AMQPConsumer.start(settings: configuration.settings, queue: t.resultsStream,
                                                        prefetch: configuration.prefetch, arguments: from.consumerArguments))
        } catch {
            for c in started { await c.close() }
            await publisher.close()
            throw error
        }
        let consumers = started
        let generation = generations.add(1, ordering: .relaxed).newValue
        logger.info("consuming", ["events": t.eventsQueue, "results": t.resultsStream, "from": "\(from)",
                                  "group": configuration.consumerGroup, "database": configuration.database.description,
                                  "broker": configuration.settings.redactedURL])
        isConsuming.store(true, ordering: .relaxed)
        defer { isConsuming.store(false, ordering: .relaxed) }
        let watcher = lifecycle.watchShutdown { for c in consumers { c.cancel() } }
        defer { watcher.cancel() }
        let failure: (any Error)? = await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask { await self.drain(consumers[0], isEvents: true, publisher: publisher) }
            group.addTask { await self.drainStream(consumers[1], generation: generation, publisher: publisher) }
            var first: (any Error)?
            for await error in group where first == nil && error != nil {
                first = error
                for c in consumers { c.cancel() }
            }
            return first
        }
        // Let the writer commit what it holds, so those deliveries are acked before closing.
        _ = await ConnectionLifecycle.drain(within: .seconds(10)) { [writer] in
            while writer.backlog > 0 && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
        }
        for c in consumers { await c.close() }
        await publisher.close()
        if let failure { throw failure }
    }

    /// Feeds the results stream to the writer, each record with its offset; returns the error
    /// that ended the consumer (`StreamRestart` after a failed transaction).
    private func drainStream(_ consumer: AMQPConsumer, generation: Int, publisher: ConfirmingPublisher) async -> (any Error)? {
        let failed = Atomic<Bool>(false)
        let stream = configuration.topology.resultsStream
        do {
            for try await delivery in consumer.deliveries {
                // After a failure nothing more of this connection is stored: the next one reads
                // again from the stored offset (what arrives until the cancel is dropped).
                if failed.load(ordering: .relaxed) { continue }
                guard let offset = delivery.streamOffset else {
                    throw StreamRestart(description: "\(stream) delivered a message without x-stream-offset: is it a stream?")
                }
                let position = EventStore.StreamPosition(consumer: configuration.consumerGroup, stream: stream, offset: offset)
                var record: EventStore.Record?
                switch Self.record(from: delivery.body, isEvents: false) {
                case .record(let r): record = r
                case .invalid(let reason):
                    guard await deadLetter(delivery, code: EventsDeadLetterCode.invalidResult.rawValue, reason: reason, consumer: consumer, publisher: publisher,
                                           ack: false) else { failed.store(true, ordering: .relaxed); continue }
                }
                let tag = delivery.deliveryTag
                writer.submit(BatchWriter.Pending(record: record, position: position, generation: generation) { committed in
                    if committed {
                        consumer.ack(tag)
                    } else {
                        failed.store(true, ordering: .relaxed)
                        consumer.cancel()
                    }
                })
            }
            return failed.load(ordering: .relaxed) ? StreamRestart(description: "records of \(stream) not stored; reading again") : nil
        } catch {
            return error
        }
    }

    /// Feeds one queue's deliveries to the writer; returns the error that ended the stream.
    private func drain(_ consumer: AMQPConsumer, isEvents: Bool, publisher: ConfirmingPublisher) async -> (any Error)? {
        do {
            for try await delivery in consumer.deliveries {
                switch Self.record(from: delivery.body, isEvents: isEvents) {
                case .record(let record):
                    store(record, delivery, attempt: 1, isEvents: isEvents, consumer: consumer, publisher: publisher)
                case .invalid(let reason):
                    await deadLetter(delivery, code: (isEvents ? EventsDeadLetterCode.invalidEvent : .invalidResult).rawValue, reason: reason,
                                     consumer: consumer, publisher: publisher)
                }
            }
            return nil
        } catch {
            return error
        }
    }

    /// Hands a record to the writer; acks once committed, retries a failed transaction, and
    /// dead-letters after `maxStoreAttempts` failures. Never requeues.
    private func store(_ record: EventStore.Record, _ delivery: Delivery, attempt: Int, isEvents: Bool, consumer: AMQPConsumer,
                       publisher: ConfirmingPublisher) {
        let tag = delivery.deliveryTag
        writer.submit(BatchWriter.Pending(record: record) { committed in
            if committed {
                consumer.ack(tag)
            } else if attempt < self.configuration.maxStoreAttempts {
                self.store(record, delivery, attempt: attempt + 1, isEvents: isEvents, consumer: consumer, publisher: publisher)
            } else {
                Task {
                    await self.deadLetter(delivery, code: EventsDeadLetterCode.storeFailed.rawValue, reason: "not stored after \(attempt) failed transactions",
                                          consumer: consumer, publisher: publisher)
                }
            }
        })
    }

    /// Copies a delivery to the events DLQ (confirmed), then acks it when `ack`; true when the
    /// copy is confirmed. Otherwise cancels the consumer (the reconnect returns the delivery).
    @discardableResult
    private func deadLetter(_ delivery: Delivery, code: String, reason: String, consumer: AMQPConsumer,
                            publisher: ConfirmingPublisher, ack: Bool = true) async -> Bool {
        var properties = delivery.properties
        properties.headers = FailureHeaders.eventDeadLetter(properties.headers, code: code, message: reason, sourceQueue: consumer.queue)
        properties.persistent = true
        do {
            try await publisher.publish(exchange: "", routingKey: configuration.topology.eventsDeadLetterQueue, body: delivery.body,
                                        properties: properties)
            if ack { consumer.ack(delivery.deliveryTag) }
            metrics.deadLettered.labels(code).increment()
            logger.warning(code == "STORE_FAILED" ? "delivery the store refused moved to the events DLQ"
                           : "unparseable delivery moved to the events DLQ", ["queue": consumer.queue, "code": code, "reason": reason])
            return true
        } catch {
            // Not requeued: stop consuming; the reconnect returns it (unacked) with the rest.
            logger.warning("cannot move a delivery to the events DLQ; reconnecting", ["queue": consumer.queue, "error": "\(error)"])
            consumer.cancel()
            return false
        }
    }

    /// The record a delivery body holds, or why it holds none.
    enum Parsed: Sendable {
        case record(EventStore.Record)
        case invalid(String)
    }

    static func record(from body: Data, isEvents: Bool) -> Parsed {
        let json: JSONValue
        do {
            json = try JSONValue.parse(body)
        } catch {
            return .invalid(error.description)
        }
        do {
            return isEvents ? .record(.event(try PushEvent.decode(json))) : .record(.send(try SendResult.decode(json)))
        } catch {
            return .invalid(error.description)
        }
    }
}
