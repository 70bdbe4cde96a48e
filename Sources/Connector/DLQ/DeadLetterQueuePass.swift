import AMQP
import Foundation

/// One pass over the DLQ that removes some messages and leaves the others in their order,
/// without ever requeueing one.
///
/// How: the pass takes the messages that were ready when it started, one by one with basic.get
/// (unacked). A message it removes is acked once the caller's work on it succeeded (a replay's
/// publish was confirmed). A message it keeps is re-published to the back of the DLQ — body and
/// properties byte for byte, every header in its order and type, `x-death` included — in read
/// order, in small batches on a second connection, mandatory and confirmed, and only THEN is the
/// original acked. After the pass the kept messages stand in their old order (the queue went
/// round once). Never requeueing is what makes it safe on RabbitMQ 4.x, where every requeue
/// counts towards the quorum queue's delivery limit (20 by default) and the DLQ has no
/// dead-letter exchange: a requeueing pass would drop dead letters after ~20 runs. A copy is a
/// new message with a delivery count of 0.
///
/// Safety: killed at any instant, the broker returns the unacked originals: nothing is lost; the
/// copies of the batch in flight (at most `batchSize`) may then be in the queue twice, and the
/// order is not guaranteed; a purge's batch in flight is not deleted. Messages dead-lettered while a pass runs are not read by it: they
/// land among the copies, in arrival order.
final class DeadLetterQueuePass {
    /// What to do with a message once looked at.
    enum Disposition { case keep, remove }

    /// Messages settled per batch (kept ones re-published with one confirm wait, then all acked).
    /// At most 16: RabbitMQ 3.10 turns each basic.get ack into its own quorum-queue command,
    /// keeps ~32 in flight per channel and stashes the rest, and stashed acks are lost when the
    /// channel closes (measured: the last acks of a batch of 36 came back as messages).
    static let batchSize = 16

    let queue: String
    private let client: AMQPChannelClient
    private let republisher: AMQPChannelClient
    private var kept: [Delivery] = []
    /// Messages read and not yet acked, and the delivery tag of the last one read.
    private var unsettled = 0
    private var lastTag: UInt64?
    /// Ack a removed message before reading the next (replay: at most the one job in flight may
    /// end up in both queues); otherwise removals are acked with their batch.
    private let settlesRemovalsAtOnce: Bool
    /// Ready messages when the pass started: the pass reads at most that many.
    let initialCount: Int

    /// Connects (twice: reading and re-publishing) and checks that the queue exists.
    init(settings: AMQPSettings, queue: String, command: String, settlesRemovalsAtOnce: Bool = false) throws(CommandFailure) {
        self.queue = queue
        self.settlesRemovalsAtOnce = settlesRemovalsAtOnce
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
        do {
            republisher = try AMQPChannelClient(settings: settings)
        } catch {
            client.close()
            throw CommandFailure("\(command): cannot connect to \(settings.redactedURL): \(error)")
        }
    }

    /// Reads the messages ready at the start once, calls `visit` on each, acks the ones it
    /// removes and re-publishes the rest in order, then closes. When `visit` throws, the message
    /// it was given is kept and the pass ends there (the unread rest stays ahead of the copies:
    /// the queue is rotated, its cyclic order kept), then the error is rethrown.
    func run(_ visit: (Delivery) throws -> Disposition) throws {
        defer {
            kept = []
            republisher.close()
            client.close()
        }
        var read = 0
        while read < initialCount, let delivery = try client.get(queue: queue) {
            read += 1
            lastTag = delivery.deliveryTag
            unsettled += 1
            let disposition: Disposition
            do {
                disposition = try visit(delivery)
            } catch {
                kept.append(delivery)
                try? settle()  // on failure the originals stay unacked and come back: nothing lost
                throw error
            }
            if disposition == .keep { kept.append(delivery) }
            if unsettled >= Self.batchSize || (disposition == .remove && settlesRemovalsAtOnce) { try settle() }
        }
        try settle()
    }

    /// Re-publishes the kept messages read since the last call to the DLQ (confirmed), then acks
    /// everything read so far (`basic.ack multiple`). On failure the originals stay unacked:
    /// closing the client returns them.
    private func settle() throws {
        guard unsettled > 0, let lastTag else { return }
        try republisher.publishCopiesConfirmed(kept, exchange: "", routingKey: queue)
        try client.ack(lastTag, multiple: true)
        kept.removeAll(keepingCapacity: true)
        unsettled = 0
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
