/// The prefetch of a consumer sized to a byte budget, without I/O: how many unacked deliveries
/// the broker may push, so that what the consumer holds (delivered and not yet completed) stays
/// within `budgetBytes` whatever the size of a delivery.
///
/// A prefetch counts deliveries, not bytes (RabbitMQ does not implement basic.qos'
/// `prefetch-size`): 2 000 prefetched jobs of one recipient are ~1 MB, 2 000 of a thousand are
/// ~350 MB. A new prefetch takes a new consumer (basic.qos applies to consumers started after it),
/// and the broker counts the new consumer's unacked deliveries apart from those the old one left
/// held, so every rule below counts what is held in all plus what the new prefetch may add:
/// - **Start** where even the largest allowed delivery fits: `budgetBytes / largestDelivery`.
/// - **Grow by doubling** while the window is at least half used and the held bytes plus twice
///   the prefetch at the held deliveries' average size fit the budget, up to `maxPrefetch`.
/// - **Shrink** when the held bytes are over the budget, to what fills half of it with deliveries
///   as large as the largest held (not the average: among many small deliveries a few large ones
///   would get a prefetch they overflow); the consumer then waits, cancelled, until the held
///   bytes leave room for the new prefetch of deliveries that large (`mayConsume`), that is
///   until about half the budget is free, without waiting for every held delivery to complete.
/// Between the two the prefetch stays put, so mixed sizes do not make it swing. A rise in size
/// overshoots by at most what the current prefetch lets in before the shrink lands.
public struct PrefetchSizer: Sendable, Equatable {
    /// Bytes of held deliveries never to go over (but for one delivery larger than it).
    public let budgetBytes: Int
    /// The prefetch never goes above this (`--prefetch`).
    public let maxPrefetch: UInt16
    /// The prefetch to start with: what fits the budget if every delivery had `largestDelivery` bytes.
    public let initial: UInt16

    public init(budgetBytes: Int, maxPrefetch: UInt16, largestDelivery: Int) {
        self.budgetBytes = max(1, budgetBytes)
        self.maxPrefetch = max(1, maxPrefetch)
        initial = Self.clamp(self.budgetBytes / max(1, largestDelivery), to: self.maxPrefetch)
    }

    /// The prefetch to change to, or nil to keep `current`, given the deliveries held now
    /// (`held` of them, `heldBytes` in all, the largest `largestHeld` bytes: asked only to shrink).
    public func resize(current: UInt16, held: Int, heldBytes: Int, largestHeld: @autoclosure () -> Int) -> UInt16? {
        guard held > 0 else { return nil }
        let average = max(1, heldBytes / held)
        if heldBytes > budgetBytes {
            let half = Self.clamp(budgetBytes / 2 / max(average, largestHeld()), to: maxPrefetch)
            return half < current ? half : nil
        }
        let doubled = Self.clamp(Int(current) * 2, to: maxPrefetch)
        guard doubled > current, held * 2 >= Int(current),
              heldBytes + Int(doubled) * average <= budgetBytes else { return nil }
        return doubled
    }

    /// Whether a consumer waiting to consume with `prefetch` may start now: nothing is held, or
    /// the held bytes leave room for `prefetch` more deliveries as large as the largest held.
    public func mayConsume(_ prefetch: UInt16, held: Int, heldBytes: Int, largestHeld: Int) -> Bool {
        guard held > 0 else { return true }
        return heldBytes + Int(prefetch) * max(1, heldBytes / held, largestHeld) <= budgetBytes
    }

    private static func clamp(_ value: Int, to maximum: UInt16) -> UInt16 {
        UInt16(min(max(value, 1), Int(maximum)))
    }
}
