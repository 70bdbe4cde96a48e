/// The ack bookkeeping of one consumer channel, without I/O: which deliveries arrived (in
/// delivery-tag order), which of them the application completed, and the fewest `basic.ack`s
/// that settle the completed ones.
///
/// Rules:
/// - **`multiple` only over a contiguous completed run.** An ack with `multiple` up to tag T
///   settles every delivery ≤ T on the channel, so it is sent only when every delivery from the
///   oldest unacked one to T is completed. A delivery never completed (its work abandoned) is
///   never covered: it stays unacked and the broker requeues it when the channel closes.
/// - **Stragglers do not hold the window.** Completed deliveries behind an unfinished one (a
///   slow or retrying job) are acked one by one once there are `stragglerLimit` of them or the
///   oldest waited `stragglerHold`, so one stuck delivery cannot fill the prefetch with settled
///   work. `flush` acks every completed delivery at once (before closing the channel).
///
/// Each delivery is settled exactly once: `complete` of an unknown or already completed tag is
/// ignored (returns false). It also counts the bytes of the deliveries held (delivered and not
/// completed), which `PrefetchSizer` sizes the prefetch by.
public struct AckCoalescer: Sendable {
    /// One `basic.ack`: the tag, and whether it settles every earlier unacked delivery too.
    public struct Ack: Sendable, Equatable {
        public var deliveryTag: UInt64
        public var multiple: Bool
        /// Deliveries it settles.
        public var count: Int

        public init(deliveryTag: UInt64, multiple: Bool, count: Int) {
            self.deliveryTag = deliveryTag
            self.multiple = multiple
            self.count = count
        }
    }

    /// Completed deliveries behind an unfinished one that trigger their single acks (a quarter
    /// of the prefetch: a sized consumer sets it again with each new prefetch).
    public var stragglerLimit: Int {
        didSet { stragglerLimit = max(1, stragglerLimit) }
    }
    /// How long completed deliveries behind an unfinished one may wait for it.
    public let stragglerHold: Duration
    /// Delivered and not yet acked, ascending, with whether each is completed.
    private var tags: [UInt64] = []
    private var done: [Bool] = []
    private var sizes: [Int] = []
    private var head = 0
    /// Completed and not yet acked.
    public private(set) var completed = 0
    /// Bytes of the deliveries delivered and not yet completed.
    public private(set) var heldBytes = 0
    /// Since when completed deliveries wait behind an unfinished one (nil: none wait).
    private var stragglersSince: ContinuousClock.Instant?

    public init(stragglerLimit: Int, stragglerHold: Duration = .seconds(1)) {
        self.stragglerLimit = max(1, stragglerLimit)
        self.stragglerHold = stragglerHold
    }

    /// Delivered and not yet acked.
    public var unacked: Int { tags.count - head }
    /// Delivered and not yet completed.
    public var held: Int { unacked - completed }

    /// Bytes of the largest delivery held (0 when none is): a walk over the unacked ones, for a
    /// prefetch shrink, not for every pass.
    public var largestHeld: Int {
        var largest = 0
        for i in head..<tags.count where !done[i] { largest = max(largest, sizes[i]) }
        return largest
    }

    /// Records a delivery of `bytes` (tags grow along a channel).
    public mutating func delivered(_ deliveryTag: UInt64, bytes: Int = 0) {
        precondition(tags.last.map { $0 < deliveryTag } ?? true, "delivery tags grow along a channel")
        tags.append(deliveryTag)
        done.append(false)
        sizes.append(bytes)
        heldBytes += bytes
    }

    /// Records that the work of `deliveryTag` is done and it may be acked; false when the tag is
    /// unknown or already completed.
    @discardableResult
    public mutating func complete(_ deliveryTag: UInt64) -> Bool {
        var low = head, high = tags.count
        while low < high {
            let mid = (low + high) / 2
            if tags[mid] < deliveryTag { low = mid + 1 } else { high = mid }
        }
        guard low < tags.count, tags[low] == deliveryTag, !done[low] else { return false }
        done[low] = true
        completed += 1
        heldBytes -= sizes[low]
        return true
    }

    /// Completed deliveries at the front, in delivery order: what one `multiple` ack may settle now.
    public var completedRun: Int {
        var end = head
        while end < tags.count && done[end] { end += 1 }
        return end - head
    }

    /// The ack settling the first `count` deliveries of the completed run (at most the run).
    public mutating func takeRun(_ count: Int) -> Ack? {
        let count = min(count, completedRun)
        guard count > 0 else { return nil }
        let end = head + count
        let ack = Ack(deliveryTag: tags[end - 1], multiple: count > 1, count: count)
        completed -= count
        head = end
        if head > 4096 && head * 2 > tags.count {
            tags.removeFirst(head)
            done.removeFirst(head)
            sizes.removeFirst(head)
            head = 0
        }
        return ack
    }

    /// The acks to send now: one (with `multiple` when it covers more than one delivery) for the
    /// completed run at the front, then single acks for the completed deliveries behind an
    /// unfinished one when the straggler rules (or `flush`) say so.
    public mutating func acks(now: ContinuousClock.Instant, flush: Bool = false) -> [Ack] {
        var acks: [Ack] = []
        if let run = takeRun(.max) { acks.append(run) }
        if completed == 0 {
            stragglersSince = nil
        } else {
            let since = stragglersSince ?? now
            stragglersSince = since
            if flush || completed >= stragglerLimit || now - since >= stragglerHold {
                var keptTags: [UInt64] = [], keptDone: [Bool] = [], keptSizes: [Int] = []
                keptTags.reserveCapacity(tags.count - head - completed)
                for i in head..<tags.count {
                    if done[i] {
                        acks.append(Ack(deliveryTag: tags[i], multiple: false, count: 1))
                    } else {
                        keptTags.append(tags[i])
                        keptDone.append(false)
                        keptSizes.append(sizes[i])
                    }
                }
                (tags, done, sizes, head, completed, stragglersSince) = (keptTags, keptDone, keptSizes, 0, 0, nil)
            }
        }
        return acks
    }
}
