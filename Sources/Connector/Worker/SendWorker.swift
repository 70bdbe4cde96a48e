import AMQP
import Foundation
import PushCore
import Synchronization

/// The send worker: `lanes` independent consumer + confirming-publisher connection pairs on the
/// job queue, each delivery processed concurrently (up to `prefetch` per lane) and acked only
/// once every message it caused is confirmed by the broker.
///
/// Lost connections are reopened with exponential backoff (unacked deliveries come back by
/// themselves). On shutdown each lane cancels its consumer, lets in-flight deliveries finish
/// within `shutdownDeadline`, and closes: anything unfinished is requeued by the broker.
public final class SendWorker: Sendable {
    /// Tunables of the worker.
    public struct Configuration: Sendable {
        public var settings: AMQPSettings
        public var topology: Topology
        public var prefetch: UInt16 = 100
        public var lanes: Int = 1
        public var shutdownDeadline: Duration = .seconds(30)
        public var reconnectBackoff: (initial: Duration, max: Duration) = (.milliseconds(200), .seconds(30))

        public init(settings: AMQPSettings, topology: Topology) {
            self.settings = settings
            self.topology = topology
        }
    }

    public let configuration: Configuration
    public let processor: JobProcessor
    public let counters = WorkerCounters()
    private let logger: Logger

    public init(configuration: Configuration, processor: JobProcessor, logger: Logger) {
        self.configuration = configuration
        self.processor = processor
        self.logger = logger
    }

    /// Runs until `shutdown` is triggered and every lane has drained.
    public func run(until shutdown: ShutdownSignal) async {
        await withTaskGroup(of: Void.self) { group in
            for lane in 0..<max(1, configuration.lanes) {
                group.addTask { await self.runLane(lane, shutdown: shutdown) }
            }
        }
        logger.info("worker stopped", counters.summary)
    }

    private func runLane(_ lane: Int, shutdown: ShutdownSignal) async {
        let log = logger.child("lane\(lane)")
        var backoff = configuration.reconnectBackoff.initial
        while !shutdown.isTriggered {
            do {
                counters.connectAttempts.add(1, ordering: .relaxed)
                let publisher = try await ConfirmingPublisher.connect(settings: configuration.settings)
                let consumer: AMQPConsumer
                do {
                    consumer = try await AMQPConsumer.start(settings: configuration.settings, queue: configuration.topology.jobsQueue,
                                                            prefetch: configuration.prefetch)
                } catch {
                    await publisher.close()
                    throw error
                }
                log.info("consuming", ["queue": configuration.topology.jobsQueue, "broker": configuration.settings.redactedURL,
                                       "prefetch": "\(configuration.prefetch)"])
                backoff = configuration.reconnectBackoff.initial
                let error = await consume(consumer, publisher, shutdown: shutdown, log: log)
                await consumer.close()
                await publisher.close()
                if let error {
                    counters.reconnects.add(1, ordering: .relaxed)
                    log.warning("connection lost, reconnecting", ["error": "\(error)"])
                }
            } catch {
                log.warning("cannot connect, retrying", ["error": "\(error)", "in": "\(backoff)"])
                await shutdown.sleep(for: backoff)
                backoff = min(backoff * 2, configuration.reconnectBackoff.max)
            }
        }
    }

    /// Consumes until the stream ends; returns the error that ended it (nil: clean shutdown).
    private func consume(_ consumer: AMQPConsumer, _ publisher: ConfirmingPublisher, shutdown: ShutdownSignal,
                         log: Logger) async -> (any Error)? {
        let tracker = InFlightTracker()
        let watcher = Task {
            await shutdown.wait()
            consumer.cancel()
        }
        defer { watcher.cancel() }
        var streamError: (any Error)?
        do {
            for try await delivery in consumer.deliveries {
                counters.deliveries.add(1, ordering: .relaxed)
                tracker.enter()
                Task {
                    await self.handle(delivery, consumer: consumer, publisher: publisher, tracker: tracker, log: log)
                    tracker.leave()
                }
            }
        } catch {
            streamError = error
        }
        if await !tracker.drain(timeout: configuration.shutdownDeadline) {
            log.warning("deadline reached with deliveries in flight; they stay unacked and the broker requeues them")
        }
        return streamError ?? tracker.failure
    }

    private func handle(_ delivery: Delivery, consumer: AMQPConsumer, publisher: ConfirmingPublisher, tracker: InFlightTracker,
                        log: Logger) async {
        let messages = await processor.process(body: delivery.body, headers: delivery.properties.headers)
        if tracker.isAbandoned { return }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for m in messages {
                    group.addTask {
                        try await publisher.publish(exchange: m.exchange, routingKey: m.routingKey, body: m.body, properties: m.properties)
                    }
                }
                try await group.waitForAll()
            }
            if tracker.isAbandoned { return }
            counters.count(messages)
            consumer.ack(delivery.deliveryTag)
            counters.acked.add(1, ordering: .relaxed)
            for m in messages where m.kind == .deadLetter {
                log.warning("job dead-lettered", ["code": m.headers[DeadLetterHeader.code]?.stringValue ?? "?",
                                                  "reason": m.headers[DeadLetterHeader.message]?.stringValue ?? ""])
            }
        } catch {
            // Not everything was confirmed: requeue, and reconnect the lane (the publisher may be dead).
            consumer.nack(delivery.deliveryTag, requeue: true)
            counters.requeued.add(1, ordering: .relaxed)
            if tracker.recordFailure(error) {
                log.warning("publish failed; requeued and reconnecting", ["error": "\(error)"])
                consumer.cancel()
            }
        }
    }
}
