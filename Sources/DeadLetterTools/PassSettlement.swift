import AMQP

/// The bookkeeping of a windowed DLQ pass, without I/O: which messages were read, which publish
/// each one waits for (its copy back to the DLQ, or its replay), and how far the originals may be
/// acked.
///
/// Originals are acked in read order with `basic.ack multiple`, up to the last message whose own
/// publish and every earlier one's are confirmed. Two more rules:
/// - **Never read past the start count.** The broker delivers while fewer than `prefetch`
///   deliveries are unacked, and the copies the pass makes queue up behind the originals; so
///   until the consumer is cancelled, acks stop at `initialCount - prefetch`, and the broker can
///   never deliver more than `initialCount` messages (a delivery the pass would not handle would
///   go back to the queue at close: a requeue, which quorum queues count).
/// - **Few settle commands in flight.** Acks go out in steps of at least `ackStep` (a quarter of
///   the window) until the end: RabbitMQ 3.10 keeps ~32 quorum-queue commands in flight per
///   channel and stashes the rest, and stashed acks are lost when the channel closes. The
///   broker's prefetch bounds what is unacked, so at most `prefetch / ackStep + 1` acks are ever
///   in flight.
///
/// Which originals are done is `AckCoalescer`'s bookkeeping (the worker's coalesced acks), used
/// without its out-of-order single acks: a pass acks only the completed run at the front.
struct PassSettlement: Sendable {
    let initialCount: Int
    let prefetch: Int
    let ackStep: Int
    /// Messages read, acked (their ack sent), removed (acked without a copy back).
    private(set) var read = 0
    private(set) var acked = 0
    private(set) var removed = 0
    /// Publishes not yet confirmed.
    private(set) var inFlight = 0
    /// Set once the consumer is cancelled: nothing more can be delivered, everything may be acked.
    var consumerCancelled = false
    /// Which originals are done (their publish confirmed, or none needed), in read order; acked
    /// only as a run from the front (no stragglers: a pass acks in read order).
    private var originals = AckCoalescer(stragglerLimit: .max)
    /// Publishes waiting for their confirm, in publish order (sequences grow with the read order).
    private var unconfirmed: [(sequence: UInt64, deliveryTag: UInt64)] = []
    /// Whether each message read is removed, from the first not yet acked on.
    private var removals: [Bool] = []

    init(initialCount: Int, window: Int) {
        self.initialCount = initialCount
        prefetch = max(1, min(window, initialCount))
        ackStep = max(1, prefetch / 4)
    }

    /// True once every message of the start count was read and acked.
    var isDone: Bool { read >= initialCount && acked == read }

    /// Records a message read, waiting for the publish `sequence` (nil: nothing to wait for),
    /// and whether the pass removes it (no copy back to the DLQ).
    mutating func add(deliveryTag: UInt64, sequence: UInt64?, removes: Bool) {
        originals.delivered(deliveryTag)
        removals.append(removes)
        read += 1
        if let sequence {
            unconfirmed.append((sequence, deliveryTag))
            inFlight += 1
        } else {
            originals.complete(deliveryTag)
        }
    }

    /// Records a broker confirm: the publish `sequence`, and with `multiple` every earlier one.
    mutating func confirm(_ sequence: UInt64, multiple: Bool) {
        if multiple {
            var n = 0
            while n < unconfirmed.count && unconfirmed[n].sequence <= sequence {
                originals.complete(unconfirmed[n].deliveryTag)
                n += 1
            }
            unconfirmed.removeFirst(n)
            inFlight -= n
        } else if let i = unconfirmed.firstIndex(where: { $0.sequence == sequence }) {
            originals.complete(unconfirmed.remove(at: i).deliveryTag)
            inFlight -= 1
        }
    }

    /// The ack to send now, if any: the delivery tag to ack with `multiple` and how many messages
    /// it settles. `flush` sends even a step smaller than `ackStep` (end of pass, or before
    /// stopping on an error).
    mutating func nextAck(flush: Bool = false) -> (deliveryTag: UInt64, count: Int)? {
        let cap = consumerCancelled ? read : max(0, initialCount - prefetch)
        let count = min(originals.completedRun, max(0, min(read, cap) - acked))
        // At the cap the ack goes out whatever its size: the broker delivers nothing more until
        // it does, and the rest only comes once it has.
        guard count > 0, flush || consumerCancelled || count >= ackStep || acked + count == cap,
              let ack = originals.takeRun(count) else { return nil }
        removed += removals[..<count].filter { $0 }.count
        removals.removeFirst(count)
        acked += count
        return (ack.deliveryTag, count)
    }
}
