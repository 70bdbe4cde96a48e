import AMQP
import Foundation
import PushCore
import Synchronization

/// Consumes the events queue and the events consumer's results queue into the `BatchWriter`;
/// each delivery is acked only after the transaction holding its record committed. A delivery
/// that cannot be parsed is copied to the events DLQ with `push-error-code` /
/// `push-error-message` headers (confirmed), then acked; consuming goes on.
///
/// Lost connections are reopened with exponential backoff; unacked deliveries come back and
/// are counted once (the store is idempotent).
///
/// Nothing is ever nacked with requeue (on RabbitMQ 4.x every requeue counts towards a quorum
/// queue's delivery limit, 20 by default, and the events results queue has no dead-letter
/// exchange: a requeued record could be dropped). A record whose transaction failed is handed
/// to the writer again, still unacked (the writer backs off after a failed transaction); after
/// `maxStoreAttempts` failures it is copied to the events DLQ with `push-error-code`
/// `STORE_FAILED`, then acked. When even that copy cannot be published, consuming stops and the
/// connection is reopened: the broker returns the unacked delivery then.
public final class EventsConsumer: Sendable {
    /// Tunables of the consumer.
    public struct Configuration: Sendable {
        public var settings: AMQPSettings
        public var topology: Topology
        /// Unacked deliveries per queue; keep it at least the batch size.
        public var prefetch: UInt16 = 2000
        public var reconnectBackoff = Backoff(initial: .milliseconds(200), max: .seconds(30))
        /// Failed transactions a record may go through before it is dead-lettered (`STORE_FAILED`).
        public var maxStoreAttempts = 5

        public init(settings: AMQPSettings, topology: Topology) {
            self.settings = settings
            self.topology = topology
        }
    }

    public let configuration: Configuration
    /// True while both queues are being consumed (for `/healthz`).
    public let isConsuming = Atomic<Bool>(false)
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
        var failures = 0
        while !shutdown.isTriggered {
            do {
                try await consumeOnce(shutdown: shutdown)
                failures = 0
            } catch {
                if shutdown.isTriggered { break }
                failures += 1
                let backoff = configuration.reconnectBackoff.delay(afterFailures: failures)
                logger.warning("events consumer lost its broker, reconnecting", ["error": "\(error)", "in": "\(backoff)"])
                await shutdown.sleep(for: backoff)
            }
        }
    }

    private func consumeOnce(shutdown: ShutdownSignal) async throws {
        let t = configuration.topology
        let publisher = try await ConfirmingPublisher.connect(settings: configuration.settings)
        var started: [AMQPConsumer] = []
        do {
            started.append(try await AMQPConsumer.start(settings: configuration.settings, queue: t.eventsQueue, prefetch: configuration.prefetch))
            started.append(try await AMQPConsumer.start(settings: configuration.settings, queue: t.eventsResultsQueue,
                                                        prefetch: configuration.prefetch))
        } catch {
            for c in started { await c.close() }
            await publisher.close()
            throw error
        }
        let consumers = started
        logger.info("consuming", ["events": t.eventsQueue, "results": t.eventsResultsQueue, "broker": configuration.settings.redactedURL])
        isConsuming.store(true, ordering: .relaxed)
        defer { isConsuming.store(false, ordering: .relaxed) }
        let watcher = Task {
            await shutdown.wait()
            for c in consumers { c.cancel() }
        }
        defer { watcher.cancel() }
        let failure: (any Error)? = await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask { await self.drain(consumers[0], isEvents: true, publisher: publisher) }
            group.addTask { await self.drain(consumers[1], isEvents: false, publisher: publisher) }
            var first: (any Error)?
            for await error in group where first == nil && error != nil {
                first = error
                for c in consumers { c.cancel() }
            }
            return first
        }
        // Let the writer commit what it holds, so those deliveries are acked before closing.
        let deadline = ContinuousClock.now + .seconds(10)
        while writer.backlog > 0 && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        for c in consumers { await c.close() }
        await publisher.close()
        if let failure { throw failure }
    }

    /// Feeds one queue's deliveries to the writer; returns the error that ended the stream.
    private func drain(_ consumer: AMQPConsumer, isEvents: Bool, publisher: ConfirmingPublisher) async -> (any Error)? {
        do {
            for try await delivery in consumer.deliveries {
                switch Self.record(from: delivery.body, isEvents: isEvents) {
                case .record(let record):
                    store(record, delivery, attempt: 1, isEvents: isEvents, consumer: consumer, publisher: publisher)
                case .invalid(let reason):
                    await deadLetter(delivery, code: isEvents ? "INVALID_EVENT" : "INVALID_RESULT", reason: reason,
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
                    await self.deadLetter(delivery, code: "STORE_FAILED", reason: "not stored after \(attempt) failed transactions",
                                          consumer: consumer, publisher: publisher)
                }
            }
        })
    }

    private func deadLetter(_ delivery: Delivery, code: String, reason: String, consumer: AMQPConsumer,
                            publisher: ConfirmingPublisher) async {
        var properties = delivery.properties
        properties.headers[DeadLetterHeader.code] = .string(code)
        properties.headers[DeadLetterHeader.message] = .string(String(reason.prefix(1000)))
        properties.headers["push-source-queue"] = .string(consumer.queue)
        properties.persistent = true
        do {
            try await publisher.publish(exchange: "", routingKey: configuration.topology.eventsDeadLetterQueue, body: delivery.body,
                                        properties: properties)
            consumer.ack(delivery.deliveryTag)
            metrics.deadLettered.labels(code).increment()
            logger.warning("unparseable delivery moved to the events DLQ", ["queue": consumer.queue, "reason": reason])
        } catch {
            // Not requeued: stop consuming; the reconnect returns it (unacked) with the rest.
            logger.warning("cannot move a delivery to the events DLQ; reconnecting", ["queue": consumer.queue, "error": "\(error)"])
            consumer.cancel()
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
