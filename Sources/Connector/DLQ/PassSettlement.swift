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
struct PassSettlement: Sendable {
    private struct Slot: Sendable {
        var deliveryTag: UInt64
        /// The publish this message waits for; nil once confirmed, or when there is none.
        var sequence: UInt64?
    }

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
    /// Read and not yet acked, in read order.
    private var slots: [Slot] = []
    private var head = 0
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
        slots.append(Slot(deliveryTag: deliveryTag, sequence: sequence))
        removals.append(removes)
        read += 1
        if sequence != nil { inFlight += 1 }
    }

    /// Records a broker confirm: the publish `sequence`, and with `multiple` every earlier one.
    mutating func confirm(_ sequence: UInt64, multiple: Bool) {
        for i in head..<slots.count {
            guard let s = slots[i].sequence else { continue }
            if s == sequence || (multiple && s < sequence) {
                slots[i].sequence = nil
                inFlight -= 1
            } else if s > sequence {
                break  // sequences grow with the read order
            }
        }
    }

    /// The ack to send now, if any: the delivery tag to ack with `multiple` and how many messages
    /// it settles. `flush` sends even a step smaller than `ackStep` (end of pass, or before
    /// stopping on an error).
    mutating func nextAck(flush: Bool = false) -> (deliveryTag: UInt64, count: Int)? {
        let cap = consumerCancelled ? read : max(0, initialCount - prefetch)
        let allowed = min(read, cap)
        var end = head
        while end < slots.count, acked + (end - head) < allowed, slots[end].sequence == nil { end += 1 }
        let count = end - head
        // At the cap (`allowed`) the ack goes out whatever its size: the broker delivers nothing
        // more until it does, and the rest only comes once it has.
        guard count > 0, flush || consumerCancelled || count >= ackStep || acked + count == cap else { return nil }
        let tag = slots[end - 1].deliveryTag
        removed += removals[head..<end].filter { $0 }.count
        acked += count
        head = end
        if head > 4096 {
            slots.removeFirst(head)
            removals.removeFirst(head)
            head = 0
        }
        return (tag, count)
    }
}
