import FoundationEssentials
import Testing
@testable import AMQP

/// The publisher's confirm bookkeeping, without a broker: what each basic.ack, basic.nack and
/// basic.return settles, and what a broker answering garbage cannot do to it.
@Suite struct ConfirmTrackerTests {
    private let start = ContinuousClock.now

    private func message(_ key: String, _ body: String = "b") -> ConfirmingPublisher.Outgoing {
        ConfirmingPublisher.Outgoing(exchange: "x", routingKey: key, body: Data(body.utf8))
    }

    /// Adds waiters 1...n (tags 1...n), written one second apart.
    private func tracker(_ n: Int) -> ConfirmTracker<Int> {
        var t = ConfirmTracker<Int>()
        for i in 1...n { t.add(i, message("k\(i)"), at: start + .seconds(i)) }
        return t
    }

    private func settle(_ t: inout ConfirmTracker<Int>, _ tag: UInt64, multiple: Bool,
                        _ result: Result<Void, AMQPError> = .success(())) -> [(Int, Bool)] {
        var out: [(Int, Bool)] = []
        t.settle(tag, multiple: multiple, result) { waiter, r in
            if case .success = r { out.append((waiter, true)) } else { out.append((waiter, false)) }
        }
        return out
    }

    @Test func aMultipleAckSettlesEveryTagUpToItInOrderAndTheOldestMovesOn() {
        var t = tracker(5)
        #expect(t.oldestSentAt == start + .seconds(1))
        let settled = settle(&t, 3, multiple: true)
        #expect(settled.map(\.0) == [1, 2, 3] && settled.allSatisfy(\.1))
        #expect(t.count == 2 && t.oldestSentAt == start + .seconds(4))
    }

    @Test func aSingleAckOutOfOrderLeavesTheOldestWaitingUntilItIsSettled() {
        var t = tracker(3)
        let second = settle(&t, 2, multiple: false).map(\.0)
        #expect(second == [2])
        #expect(t.oldestSentAt == start + .seconds(1), "tag 1 is still the oldest")
        let first = settle(&t, 1, multiple: false).map(\.0)
        #expect(first == [1])
        #expect(t.oldestSentAt == start + .seconds(3), "the gap left by tag 2 is skipped")
    }

    @Test func aNackFailsWhatItCovers() {
        var t = tracker(3)
        let settled = settle(&t, 2, multiple: true, .failure(.nacked()))
        #expect(settled.map(\.0) == [1, 2] && settled.allSatisfy { !$0.1 })
        #expect(t.count == 1)
    }

    @Test func aReturnFailsTheOldestMatchingPublishWhenItsAckArrives() {
        var t = ConfirmTracker<Int>()
        t.add(1, message("same", "a"), at: start)
        t.add(2, message("same", "a"), at: start)
        t.add(3, message("other", "a"), at: start)
        let matched = t.markReturned(exchange: "x", routingKey: "same", body: Data("a".utf8), .returned("no route", replyCode: 312))
        let unmatched = t.markReturned(exchange: "x", routingKey: "none", body: Data("a".utf8), .returned("no route", replyCode: 312))
        #expect(matched && !unmatched, "a return that matches nothing is ignored")
        let settled = settle(&t, 3, multiple: true)
        #expect(settled.map(\.0) == [1, 2, 3])
        #expect(settled.map(\.1) == [false, true, true], "only the oldest of the two equal publishes was returned")
    }

    @Test func aClosedChannelFailsEverythingInTagOrderAndNumberingRestarts() {
        var t = tracker(4)
        var failed: [Int] = []
        t.failAll(.closed("the channel")) { waiter, _ in failed.append(waiter) }
        #expect(failed == [1, 2, 3, 4] && t.isEmpty && t.oldestSentAt == nil)
        let tag = t.add(9, message("k"), at: start)
        #expect(tag == 1, "the new channel counts from 1")
    }

    /// A broker (or a proxy) answering garbage must not hang the publisher's thread nor lose
    /// track of later publishes: an ack of a tag never written settles what exists and stops there.
    @Test func anAckOfATagNeverWrittenSettlesOnlyWhatExists() {
        var t = tracker(2)
        let all = settle(&t, 1_000, multiple: true).map(\.0)  // (before the fix, UInt64.max walked 2^64 numbers)
        #expect(all == [1, 2])
        let unknown = settle(&t, 7, multiple: false)
        #expect(unknown.isEmpty)
        let tag = t.add(3, message("k3"), at: start + .seconds(9))
        #expect(tag == 3 && t.oldestSentAt == start + .seconds(9), "a later publish is still tracked as the oldest")
        let later = settle(&t, 3, multiple: true).map(\.0)
        #expect(later == [3])
    }
}
