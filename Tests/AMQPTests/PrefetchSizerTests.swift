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
        #expect(sizer.resize(current: 4, held: 4, heldBytes: 400) == 8)
        #expect(sizer.resize(current: 8, held: 4, heldBytes: 400) == 16)
        #expect(sizer.resize(current: 32, held: 16, heldBytes: 800) == 64)
        #expect(sizer.resize(current: 64, held: 64, heldBytes: 640) == nil, "never above maxPrefetch")
    }

    @Test func doesNotGrowAnIdleWindow() {
        #expect(sizer.resize(current: 16, held: 7, heldBytes: 70) == nil)
        #expect(sizer.resize(current: 16, held: 0, heldBytes: 0) == nil)
    }

    /// The new consumer's prefetch comes on top of what the old one left held.
    @Test func growsOnlyWhenWhatIsHeldPlusTheNewWindowFits() {
        // 4 held of 1 KiB: 4 KiB + 8 more of 1 KiB is over 8 KiB.
        #expect(sizer.resize(current: 4, held: 4, heldBytes: 4096) == nil)
        // 2 held of 1 KiB: 2 KiB + 8 × 1 KiB is over too; with a prefetch of 2, 1 held of 512 B:
        // 512 B + 4 × 512 B fits.
        #expect(sizer.resize(current: 4, held: 2, heldBytes: 2048) == nil)
        #expect(sizer.resize(current: 2, held: 1, heldBytes: 512) == 4)
    }

    @Test func shrinksToHalfTheBudgetOnceOverIt() {
        // 32 held of 512 B = 16 KiB: half the budget holds 8 of them.
        #expect(sizer.resize(current: 64, held: 32, heldBytes: 16384) == 8)
        #expect(sizer.resize(current: 8, held: 32, heldBytes: 16384) == nil, "already there")
        #expect(sizer.resize(current: 8, held: 1, heldBytes: 100_000) == 1, "one delivery over the budget")
    }

    @Test func aWaitingConsumerStartsOnceTheHeldBytesLeaveRoom() {
        #expect(!sizer.mayConsume(8, held: 12, heldBytes: 6144))  // 6 KiB + 8 × 512 B
        #expect(sizer.mayConsume(8, held: 8, heldBytes: 4096))    // 4 KiB + 8 × 512 B
        #expect(sizer.mayConsume(8, held: 0, heldBytes: 0))
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
