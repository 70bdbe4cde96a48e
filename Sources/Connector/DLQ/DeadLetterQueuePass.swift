import AMQP
import Foundation

/// One pass over the whole DLQ that removes some messages and leaves the others where they were,
/// in their order.
///
/// How order is kept (measured on RabbitMQ 3.10 quorum queues, pinned by `DlqIntegrationTests`):
/// a requeued message goes to the BACK of a quorum queue, and the messages returned when a channel
/// closes come back in no particular order. So a pass takes every message with basic.get
/// (unacked), acks those it removes, and at the end nacks the kept ones one by one in the order it
/// got them, with requeue: they go back in their original order, behind nothing — the pass read
/// the queue to its end. That is why even `list --limit 10` reads the whole queue.
///
/// Safety: a message is only ever acked after what the caller did with it succeeded (a replay's
/// publish was confirmed). Killed at any instant, the broker requeues what was unacked: nothing
/// is lost, but then the order of the kept messages is not guaranteed (see docs/operations.md).
/// Messages published to the DLQ during a pass are read by the pass too.
final class DeadLetterQueuePass {
    /// What to do with a message once looked at.
    enum Disposition { case keep, remove }

    let queue: String
    private let client: AMQPChannelClient
    private var kept: [UInt64] = []
    /// Ready messages when the pass started (for progress and ETA).
    let initialCount: Int

    /// Connects and checks that the queue exists.
    init(settings: AMQPSettings, queue: String, command: String) throws(CommandFailure) {
        self.queue = queue
        do {
            client = try AMQPChannelClient(settings: settings)
        } catch {
            throw CommandFailure("\(command): cannot connect to \(settings.redactedURL): \(error)")
        }
        do {
            initialCount = Int(try client.messageCount(queue: queue))
        } catch {
            client.close()
            throw CommandFailure("\(command): the DLQ \(queue) does not exist on \(settings.redactedURL) "
                + "(wrong --prefix? run push-connector topology declare): \(error)")
        }
    }

    /// Reads every message once, calls `visit` on it, acks the ones it removes, then requeues the
    /// rest in order and closes. When `visit` throws, the message it was given is kept and the
    /// pass ends there (the rest stays in the queue, order kept), then the error is rethrown.
    func run(_ visit: (Delivery) throws -> Disposition) throws {
        defer { finish() }
        while let delivery = try client.get(queue: queue) {
            let disposition: Disposition
            do {
                disposition = try visit(delivery)
            } catch {
                kept.append(delivery.deliveryTag)
                throw error
            }
            switch disposition {
            case .keep: kept.append(delivery.deliveryTag)
            case .remove: try client.ack(delivery.deliveryTag)
            }
        }
    }

    /// Requeues the kept messages in the order they were read, in small batches, each waited for,
    /// then closes.
    ///
    /// Why batches (RabbitMQ 3.10 quorum queues, measured and read in rabbit_fifo): the channel
    /// keeps at most ~32 queue commands in flight; further nacks are stashed and sent later as ONE
    /// return command, which the queue applies in hash-map order — 1 000 kept messages came back
    /// scrambled after the 33rd. A return of at most 32 messages is applied in delivery order. So
    /// the pass nacks 16 at a time and waits (polling the ready count) until the queue has taken
    /// them back before the next 16. Bounded: if the count does not come (another consumer took
    /// messages), it stops waiting after a few seconds and only order, never a message, is at stake.
    private func finish() {
        defer {
            kept = []
            client.close()
        }
        guard !kept.isEmpty, let base = try? Int(client.messageCount(queue: queue)) else { return }
        let batch = 16
        var returned = 0
        let waitBudget = Date().addingTimeInterval(10 + Double(kept.count) / 500)
        while returned < kept.count {
            for tag in kept[returned..<min(returned + batch, kept.count)] {
                guard (try? client.nack(tag, requeue: true)) != nil else { return }
            }
            returned = min(returned + batch, kept.count)
            while Date() < waitBudget {
                guard let ready = try? Int(client.messageCount(queue: queue)) else { return }
                if ready >= base + returned { break }
                Thread.sleep(forTimeInterval: 0.001)
            }
            if Date() >= waitBudget { break }
        }
        // Past the budget: nack the rest at once (order of those not guaranteed, nothing lost).
        for tag in kept[returned...] { _ = try? client.nack(tag, requeue: true) }
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
