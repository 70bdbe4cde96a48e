import AMQP
import CLIKit
import FoundationEssentials

/// One pass over the DLQ that removes some messages and leaves the others in their order,
/// without ever requeueing one.
///
/// How: the pass consumes the messages that were ready when it started (prefetch = the window,
/// manual acks). A message it keeps is re-published to the back of the DLQ — body and properties
/// byte for byte, every header in its order and type, `x-death` included — and a message it moves
/// (a replay) is published to its destination; both in read order, *mandatory*, on a second
/// connection in confirm mode, with up to `window` publishes in flight and the confirms read as a
/// stream. An original is acked only once its own publish and every earlier one are confirmed
/// (`PassSettlement`: `basic.ack multiple`, in read order). After the pass the kept messages stand
/// in their old order (the queue went round once). Never requeueing is what makes it safe on
/// RabbitMQ 4.x, where every requeue counts towards the quorum queue's delivery limit (20 by
/// default) and the DLQ has no dead-letter exchange: a requeueing pass would drop dead letters
/// after ~20 runs. A copy is a new message with a delivery count of 0.
///
/// Safety: killed at any instant, the broker returns the unacked originals: nothing is lost; the
/// messages in flight (at most `window`) may then be both in the DLQ and at their copy or replay
/// destination, and the returned ones come back in no guaranteed order. Messages dead-lettered
/// while a pass runs are not read by it: they land among the copies, in arrival order.
final class DeadLetterQueuePass {
    /// What to do with a message once looked at.
    enum Disposition {
        /// Leave it in the DLQ (re-published to the back, then the original acked).
        case keep
        /// Delete it (acked, nothing published).
        case remove
        /// Move it: publish this message (mandatory) and ack the original once it is confirmed.
        case move(exchange: String, routingKey: String, body: Data, properties: MessageProperties)
    }

    /// The window of the passes that only read or delete (`list`, `stats`, `export`, `purge`):
    /// at most 16 copies in flight, so a kill leaves at most 16 messages twice in the DLQ.
    static let readingWindow = 16

    let queue: String
    let window: Int
    private let client: AMQPChannelClient
    private let republisher: AMQPChannelClient
    /// Ready messages when the pass started: the pass reads at most that many.
    let initialCount: Int
    /// Messages the pass removed or moved, counted once their ack was sent.
    private(set) var removed = 0

    /// Connects (twice: reading and publishing) and checks that the queue exists.
    init(settings: AMQPSettings, queue: String, command: String, window: Int = DeadLetterQueuePass.readingWindow) throws(CommandFailure) {
        self.queue = queue
        self.window = max(1, min(window, Int(UInt16.max)))
        do {
            client = try AMQPChannelClient(settings: settings)
        } catch {
            throw CommandFailure.broker(error, command: command, step: "cannot connect to \(settings.redactedURL)")
        }
        do {
            initialCount = Int(try client.messageCount(queue: queue))
        } catch {
            client.close()
            throw CommandFailure("\(command): the DLQ \(queue) does not exist on \(settings.redactedURL) "
                + "(wrong --prefix? run push-connector topology declare): \(error)")
        }
        do {
            republisher = try AMQPChannelClient(settings: settings)
        } catch {
            client.close()
            throw CommandFailure.broker(error, command: command, step: "cannot connect to \(settings.redactedURL)")
        }
    }

    /// Reads the messages ready at the start once, calls `visit` on each, and keeps, removes or
    /// moves it as told, then closes. On an error (`visit` throwing, a publish returned or
    /// nacked, a lost connection) it stops reading, acks what is settled and rethrows; the
    /// messages still in flight stay unacked and the broker returns them to the DLQ.
    func run(_ visit: (Delivery) throws -> Disposition) throws {
        defer {
            republisher.close()
            client.close()
        }
        guard initialCount > 0 else { return }
        var settlement = PassSettlement(initialCount: initialCount, window: window)
        let consumerTag = try client.consume(queue: queue, prefetch: UInt16(settlement.prefetch))
        do {
            try loop(&settlement, consumerTag: consumerTag, visit)
        } catch {
            // Settle what is known good; nothing more may be delivered once cancelled.
            if (try? client.cancel(consumerTag: consumerTag)) != nil {
                settlement.consumerCancelled = true
                if let ack = settlement.nextAck(flush: true) { try? client.ack(ack.deliveryTag, multiple: true) }
            }
            removed = settlement.removed
            throw error
        }
        removed = settlement.removed
    }

    private func loop(_ settlement: inout PassSettlement, consumerTag: String, _ visit: (Delivery) throws -> Disposition) throws {
        var idleSince = ContinuousClock.now
        while !settlement.isDone {
            var progressed = false
            if settlement.read < initialCount, settlement.inFlight < window,
               let delivery = try client.nextDelivery(timeoutMicros: 0) {
                progressed = true
                let sequence: UInt64?
                let disposition = try visit(delivery)
                switch disposition {
                case .keep:
                    sequence = try republisher.publish(copyOf: delivery, exchange: "", routingKey: queue)
                case .remove:
                    sequence = nil
                case .move(let exchange, let routingKey, let body, let properties):
                    sequence = try republisher.publish(exchange: exchange, routingKey: routingKey, body: body,
                                                       properties: properties, mandatory: true)
                }
                var removes = true
                if case .keep = disposition { removes = false }
                settlement.add(deliveryTag: delivery.deliveryTag, sequence: sequence, removes: removes)
            }
            while let event = try republisher.nextConfirm(timeoutMicros: 0) {
                progressed = true
                switch event {
                case .ack(let sequence, let multiple): settlement.confirm(sequence, multiple: multiple)
                case .nack: throw AMQPError.nacked()
                case .returned(let error): throw error
                }
            }
            if settlement.read == initialCount, !settlement.consumerCancelled {
                try client.cancel(consumerTag: consumerTag)
                settlement.consumerCancelled = true
            }
            if let ack = settlement.nextAck() {
                try client.ack(ack.deliveryTag, multiple: true)
                progressed = true
            }
            if progressed {
                idleSince = .now
            } else {
                if settlement.inFlight == 0, settlement.read < initialCount, ContinuousClock.now - idleSince > .seconds(3),
                   try republisher.messageCount(queue: queue) == 0 {
                    // Fewer messages than at the start (another consumer took some): end here.
                    try client.cancel(consumerTag: consumerTag)
                    settlement.consumerCancelled = true
                    if let ack = settlement.nextAck(flush: true) { try client.ack(ack.deliveryTag, multiple: true) }
                    return
                }
                AMQPChannelClient.waitForFrames([client, republisher], timeoutMillis: 100)
            }
        }
    }

    /// queue.purge: removes every ready message at once; returns how many.
    static func purgeAll(settings: AMQPSettings, queue: String, command: String) throws(CommandFailure) -> Int {
        do {
            let client = try AMQPChannelClient(settings: settings)
            defer { client.close() }
            _ = try client.messageCount(queue: queue)
            return Int(try client.purgeQueue(queue))
        } catch {
            throw CommandFailure("\(command): cannot purge \(queue) on \(settings.redactedURL): \(error)")
        }
    }
}
