@testable import DeadLetterTools
import Testing
@testable import Connector

/// The in-order settlement of a windowed DLQ pass (pure logic).
@Suite(.timeLimit(.minutes(1))) struct PassSettlementTests {
    @Test func originalsAreAckedInReadOrderOnlyUpToTheFirstUnconfirmedPublish() {
        var s = PassSettlement(initialCount: 100, window: 8)  // ack step 2
        for i in 1...4 { s.add(deliveryTag: UInt64(i), sequence: UInt64(i), removes: true) }
        #expect(s.inFlight == 4 && s.nextAck() == nil)
        s.confirm(2, multiple: false)  // 1 still unconfirmed: nothing may be acked
        #expect(s.nextAck() == nil)
        s.confirm(1, multiple: false)
        #expect(s.nextAck().map { [$0.deliveryTag, UInt64($0.count)] } == [2, 2])
        s.confirm(4, multiple: true)
        #expect(s.nextAck().map { [$0.deliveryTag, UInt64($0.count)] } == [4, 2])
        #expect(s.inFlight == 0 && s.acked == 4 && s.removed == 4)
    }

    @Test func acksWaitForAQuarterOfTheWindowUnlessFlushed() {
        var s = PassSettlement(initialCount: 100, window: 16)  // ack step 4
        s.add(deliveryTag: 1, sequence: nil, removes: true)
        s.add(deliveryTag: 2, sequence: nil, removes: false)
        #expect(s.nextAck() == nil)
        #expect(s.nextAck(flush: true).map { [$0.deliveryTag, UInt64($0.count)] } == [2, 2])
        #expect(s.removed == 1)
    }

    /// Until the consumer is cancelled, acks stop at `initialCount - prefetch`, so the broker can
    /// never deliver more than the messages ready at the start (the copies behind them).
    @Test func acksNeverLetTheBrokerDeliverPastTheStartCount() {
        var s = PassSettlement(initialCount: 10, window: 4)
        for i in 1...10 { s.add(deliveryTag: UInt64(i), sequence: nil, removes: false) }
        var acked = 0
        while let ack = s.nextAck(flush: true) { acked += ack.count }
        #expect(acked == 6)  // 6 acked + 4 prefetch = 10 delivered at most
        #expect(!s.isDone)
        s.consumerCancelled = true
        #expect(s.nextAck().map(\.count) == 4)
        #expect(s.isDone)
    }

    /// Found by the SIGKILL test: a last step smaller than `ackStep` up to the cap must go out,
    /// else the broker (prefetch full) and the pass (waiting for a full step) wait for each other.
    @Test func theAckUpToTheCapGoesOutEvenWhenSmallerThanAStep() {
        var s = PassSettlement(initialCount: 105, window: 100)  // ack step 25, cap 5 until cancelled
        for i in 1...100 { s.add(deliveryTag: UInt64(i), sequence: nil, removes: true) }
        #expect(s.nextAck().map { [$0.deliveryTag, UInt64($0.count)] } == [5, 5])
        #expect(s.nextAck() == nil)
    }

    @Test func aWindowLargerThanTheQueueIsCappedAtTheQueue() {
        let s = PassSettlement(initialCount: 3, window: 100)
        #expect(s.prefetch == 3 && s.ackStep == 1)
    }
}
