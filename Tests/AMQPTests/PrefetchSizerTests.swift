import Testing
@testable import AMQP

/// The prefetch sized to a byte budget (pure logic), and the held bytes it reads off the ack
/// bookkeeping.
@Suite(.timeLimit(.minutes(1))) struct PrefetchSizerTests {
    /// 8 KiB budget, at most 64, deliveries of at most 2 KiB.
    private let sizer = PrefetchSizer(budgetBytes: 8192, maxPrefetch: 64, largestDelivery: 2048)

    @Test func startsWhereEvenTheLargestDeliveriesFit() {
        #expect(sizer.initial == 4)
        #expect(PrefetchSizer(budgetBytes: 1 << 30, maxPrefetch: 64, largestDelivery: 1).initial == 64)
        #expect(PrefetchSizer(budgetBytes: 100, maxPrefetch: 64, largestDelivery: 1 << 20).initial == 1)
    }

    @Test func growsByDoublingWhileTheWindowIsUsedAndSmallDeliveriesFit() {
        #expect(sizer.resize(current: 4, held: 4, heldBytes: 400, largestHeld: 100) == 8)
        #expect(sizer.resize(current: 8, held: 4, heldBytes: 400, largestHeld: 100) == 16)
        #expect(sizer.resize(current: 32, held: 16, heldBytes: 800, largestHeld: 50) == 64)
        #expect(sizer.resize(current: 64, held: 64, heldBytes: 640, largestHeld: 10) == nil, "never above maxPrefetch")
    }

    @Test func doesNotGrowAnIdleWindow() {
        #expect(sizer.resize(current: 16, held: 7, heldBytes: 70, largestHeld: 10) == nil)
        #expect(sizer.resize(current: 16, held: 0, heldBytes: 0, largestHeld: 0) == nil)
    }

    /// The new consumer's prefetch comes on top of what the old one left held.
    @Test func growsOnlyWhenWhatIsHeldPlusTheNewWindowFits() {
        // 4 held of 1 KiB: 4 KiB + 8 more of 1 KiB is over 8 KiB.
        #expect(sizer.resize(current: 4, held: 4, heldBytes: 4096, largestHeld: 1024) == nil)
        // 2 held of 1 KiB: 2 KiB + 8 × 1 KiB is over too; with a prefetch of 2, 1 held of 512 B:
        // 512 B + 4 × 512 B fits.
        #expect(sizer.resize(current: 4, held: 2, heldBytes: 2048, largestHeld: 1024) == nil)
        #expect(sizer.resize(current: 2, held: 1, heldBytes: 512, largestHeld: 512) == 4)
    }

    @Test func shrinksToHalfTheBudgetOnceOverIt() {
        // 32 held of 512 B = 16 KiB: half the budget holds 8 of them.
        #expect(sizer.resize(current: 64, held: 32, heldBytes: 16384, largestHeld: 512) == 8)
        #expect(sizer.resize(current: 8, held: 32, heldBytes: 16384, largestHeld: 512) == nil, "already there")
        #expect(sizer.resize(current: 8, held: 1, heldBytes: 100_000, largestHeld: 100000) == 1, "one delivery over the budget")
    }

    @Test func aWaitingConsumerStartsOnceTheHeldBytesLeaveRoom() {
        #expect(!sizer.mayConsume(8, held: 12, heldBytes: 6144, largestHeld: 512))  // 6 KiB + 8 × 512 B
        #expect(sizer.mayConsume(8, held: 8, heldBytes: 4096, largestHeld: 512))    // 4 KiB + 8 × 512 B
        #expect(sizer.mayConsume(8, held: 0, heldBytes: 0, largestHeld: 0))
    }

    /// Many small deliveries and a few large ones: the shrink is sized by the large ones, so the
    /// new prefetch of them fits half the budget, and the consumer resumes once that much is
    /// free, not only once it holds nothing.
    @Test func amongMixedSizesTheShrinkAndTheWaitAreSizedByTheLargestHeld() {
        // 40 held of 100 B and 4 of 2 KiB: 12 192 B, over 8 KiB; the average (277 B) would give 14.
        let heldBytes = 40 * 100 + 4 * 2048
        #expect(sizer.resize(current: 64, held: 44, heldBytes: heldBytes, largestHeld: 2048) == 2)
        // The small ones done, 3 large still held: 6 KiB + 2 × 2 KiB is over the budget; 2 held leave room.
        #expect(!sizer.mayConsume(2, held: 3, heldBytes: 3 * 2048, largestHeld: 2048))
        #expect(sizer.mayConsume(2, held: 2, heldBytes: 2 * 2048, largestHeld: 2048))
    }

    @Test func theAckBookkeepingKnowsTheLargestDeliveryHeld() {
        var c = AckCoalescer(stragglerLimit: 100, stragglerHold: .seconds(60))
        #expect(c.largestHeld == 0)
        for (tag, bytes) in [(1, 100), (2, 5000), (3, 300), (4, 4000)] { c.delivered(UInt64(tag), bytes: bytes) }
        #expect(c.largestHeld == 5000)
        c.complete(2)
        #expect(c.largestHeld == 4000, "a completed delivery is no longer held")
        c.complete(1)
        _ = c.acks(now: .now)
        c.complete(4)
        #expect(c.largestHeld == 300)
    }

    @Test func theAckBookkeepingCountsTheBytesHeldUntilCompleted() {
        var c = AckCoalescer(stragglerLimit: 1, stragglerHold: .seconds(1))
        for tag: UInt64 in 1...4 { c.delivered(tag, bytes: Int(tag) * 100) }
        #expect(c.held == 4 && c.heldBytes == 1000)
        c.complete(2)
        c.complete(2)  // once only
        #expect(c.held == 3 && c.heldBytes == 800)
        _ = c.acks(now: .now)  // acks 2 as a straggler; 1, 3 and 4 stay held
        c.complete(4)
        #expect(c.held == 2 && c.heldBytes == 400)
        c.complete(1)
        c.complete(3)
        _ = c.acks(now: .now)
        #expect(c.held == 0 && c.heldBytes == 0 && c.unacked == 0)
    }
}
