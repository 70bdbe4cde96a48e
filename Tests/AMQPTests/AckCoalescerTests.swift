import Testing
@testable import AMQP

/// The coalesced acks of a consumer channel (pure logic).
@Suite(.timeLimit(.minutes(1))) struct AckCoalescerTests {
    private let t0 = ContinuousClock.now

    /// `acks` outside the `#expect` macro (it cannot call a mutating method).
    private func acks(_ c: inout AckCoalescer, _ now: ContinuousClock.Instant, flush: Bool = false) -> [AckCoalescer.Ack] {
        c.acks(now: now, flush: flush)
    }

    private func complete(_ c: inout AckCoalescer, _ tag: UInt64) -> Bool { c.complete(tag) }

    private func coalescer(_ tags: ClosedRange<UInt64>, stragglerLimit: Int = 100) -> AckCoalescer {
        var c = AckCoalescer(stragglerLimit: stragglerLimit, stragglerHold: .seconds(1))
        for tag in tags { c.delivered(tag) }
        return c
    }

    @Test func aContiguousCompletedRunIsOneAckWithMultiple() {
        var c = coalescer(1...5)
        for tag: UInt64 in [3, 1, 2] { c.complete(tag) }
        #expect(acks(&c, t0) == [.init(deliveryTag: 3, multiple: true, count: 3)])
        #expect(c.unacked == 2)
        c.complete(4)
        #expect(acks(&c, t0) == [.init(deliveryTag: 4, multiple: false, count: 1)])
    }

    @Test func nothingIsAckedPastAnUnfinishedDelivery() {
        var c = coalescer(1...4)
        for tag: UInt64 in [2, 3, 4] { c.complete(tag) }
        #expect(acks(&c, t0).isEmpty)  // 1 is not done: a multiple ack of 4 would settle it
        c.complete(1)
        #expect(acks(&c, t0) == [.init(deliveryTag: 4, multiple: true, count: 4)])
        #expect(c.unacked == 0 && c.completed == 0)
    }

    @Test func stragglersAreAckedOneByOneAtTheLimit() {
        var c = coalescer(1...6, stragglerLimit: 3)
        c.complete(3)
        c.complete(5)
        #expect(acks(&c, t0).isEmpty)
        c.complete(6)
        #expect(acks(&c, t0) == [.init(deliveryTag: 3, multiple: false, count: 1),
                                     .init(deliveryTag: 5, multiple: false, count: 1),
                                     .init(deliveryTag: 6, multiple: false, count: 1)])
        // 1, 2 and 4 stay unacked; once they are done, one ack with multiple settles the three
        // (3 is acked already, so `multiple` up to 4 covers exactly 1, 2 and 4).
        c.complete(4)
        c.complete(2)
        #expect(acks(&c, t0).isEmpty)
        c.complete(1)
        #expect(acks(&c, t0) == [.init(deliveryTag: 4, multiple: true, count: 3)])
        #expect(c.unacked == 0)
    }

    @Test func stragglersAreAckedOnceTheyWaitedTheHold() {
        var c = coalescer(1...3)
        c.complete(2)
        #expect(acks(&c, t0).isEmpty)
        #expect(acks(&c, t0 + .milliseconds(999)).isEmpty)
        #expect(acks(&c, t0 + .seconds(1)) == [.init(deliveryTag: 2, multiple: false, count: 1)])
        c.complete(1)
        #expect(acks(&c, t0 + .seconds(1)) == [.init(deliveryTag: 1, multiple: false, count: 1)])
    }

    @Test func aDeliveryIsSettledOnceAndUnknownTagsAreIgnored() {
        var c = coalescer(1...2)
        #expect(complete(&c, 1))
        #expect(!complete(&c, 1))
        #expect(!complete(&c, 7))
        #expect(acks(&c, t0).map(\.deliveryTag) == [1])
        #expect(!complete(&c, 1))  // acked already
        #expect(acks(&c, t0, flush: true).isEmpty)
    }

    /// A long run of in-order completions with acks read now and then: every delivery is settled
    /// exactly once and by far fewer acks than deliveries.
    @Test func manyDeliveriesSettleExactlyOnceWithFewAcks() {
        var c = AckCoalescer(stragglerLimit: 250)
        var settled = 0, acks = 0
        var next: UInt64 = 1
        for round in 0..<100 {
            for _ in 0..<100 { c.delivered(next); next += 1 }
            // Complete this round's deliveries in reverse order but one, which completes a round later.
            let first = UInt64(round * 100 + 1)
            for tag in stride(from: first + 99, through: first + 1, by: -1) { c.complete(tag) }
            if round > 0 { c.complete(first - 100) }
            for ack in c.acks(now: t0) { settled += ack.count; acks += 1 }
        }
        c.complete(UInt64(99 * 100 + 1))
        for ack in c.acks(now: t0, flush: true) { settled += ack.count; acks += 1 }
        #expect(settled == 10_000 && c.unacked == 0)
        #expect(acks <= 101, "\(acks) acks")
    }
}
