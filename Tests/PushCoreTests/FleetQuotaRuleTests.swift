import Testing
@testable import PushCore

/// The share rule: a process takes own lanes / all consumers of the job queue.
@Suite(.timeLimit(.minutes(1))) struct QuotaShareTests {
    @Test func aProcessAloneTakesTheWholeQuota() {
        var rule = QuotaShare(ownLanes: 1)
        #expect(rule.share == 1, "before any count")
        let share1 = rule.update(reported: 1, ownConsuming: 1)
        #expect(share1 == 1)
        #expect(rule.fleetConsumers == 1)
    }

    @Test func threeSingleLaneReplicasTakeAThirdEach() {
        var rule = QuotaShare(ownLanes: 1)
        let share1 = rule.update(reported: 3, ownConsuming: 1)
        #expect(share1 == 1.0 / 3)
        #expect(QuotaShare.limit(600, share: rule.share) == 200)
    }

    @Test func aProcessWithTwoOfFourConsumersTakesHalf() {
        var rule = QuotaShare(ownLanes: 2)
        let share1 = rule.update(reported: 4, ownConsuming: 2)
        #expect(share1 == 0.5)
        #expect(rule.fleetConsumers == 4)
    }

    @Test func aStartingProcessCountsItsLanesBeforeTheyConsume() {
        // Two other consumers; our two lanes not consuming yet: the broker reports 2.
        var rule = QuotaShare(ownLanes: 2)
        let share1 = rule.update(reported: 2, ownConsuming: 0)
        #expect(share1 == 0.5)
        // One lane up: the broker reports 3, we still count 2 others.
        let share2 = rule.update(reported: 3, ownConsuming: 1)
        #expect(share2 == 0.5)
    }

    @Test func aZeroOrUnknownCountKeepsTheLastShare() {
        var rule = QuotaShare(ownLanes: 1)
        rule.update(reported: 4, ownConsuming: 1)
        let share1 = rule.update(reported: 0, ownConsuming: 0)
        #expect(share1 == 0.25, "broker restarting: every consumer gone for a moment")
        let share2 = rule.update(reported: nil, ownConsuming: 1)
        #expect(share2 == 0.25, "count failed")
        #expect(rule.fleetConsumers == 4)
    }

    @Test func replicasComingAndGoingMoveTheShare() {
        var rule = QuotaShare(ownLanes: 1)
        let share1 = rule.update(reported: 2, ownConsuming: 1)
        #expect(share1 == 0.5)
        let share2 = rule.update(reported: 4, ownConsuming: 1)
        #expect(share2 == 0.25, "two replicas joined")
        let share3 = rule.update(reported: 1, ownConsuming: 1)
        #expect(share3 == 1, "all others left")
    }

    @Test func aCountLaggingBehindOurOwnLanesNeverGivesMoreThanTheWholeQuota() {
        var rule = QuotaShare(ownLanes: 3)
        let share1 = rule.update(reported: 1, ownConsuming: 3)
        #expect(share1 == 1)
        #expect(rule.fleetConsumers == 3)
    }

    @Test func everyProcessOfAConsistentCountTogetherTakesExactlyTheQuota() {
        for lanes in [[1, 1, 1], [1, 2, 3], [4], [2, 2, 1, 1, 1, 5]] {
            let total = lanes.reduce(0, +)
            let shares = lanes.map { own -> Double in
                var rule = QuotaShare(ownLanes: own)
                return rule.update(reported: total, ownConsuming: own)
            }
            #expect(abs(shares.reduce(0, +) - 1) < 1e-9, "\(lanes)")
            #expect(lanes.map { QuotaShare.limit(600_000, share: Double($0) / Double(total)) }.reduce(0, +) <= 600_000)
        }
    }

    @Test func aScaledLimitIsNeverZero() {
        #expect(QuotaShare.limit(10, share: 0.01) == 1)
        #expect(QuotaShare.limit(600_000, share: 1) == 600_000)
    }
}

/// The no-storm rule of quota pauses.
@Suite(.timeLimit(.minutes(1))) struct FleetPauseLedgerTests {
    @Test func aFirstPauseIsBroadcast() {
        var ledger = FleetPauseLedger()
        let announce1 = ledger.shouldBroadcast(project: "p", until: 10_000)
        #expect(announce1)
        #expect(ledger.pausedUntil["p"] == 10_000)
    }

    @Test func aPauseNotEndingAtLeastASecondLaterIsNotBroadcastAgain() {
        var ledger = FleetPauseLedger(minimumExtensionMillis: 1_000)
        let announce1 = ledger.shouldBroadcast(project: "p", until: 10_000)
        #expect(announce1)
        let announce2 = ledger.shouldBroadcast(project: "p", until: 10_000)
        #expect(!announce2, "the same 429 burst")
        let announce3 = ledger.shouldBroadcast(project: "p", until: 9_000)
        #expect(!announce3, "shorter")
        let announce4 = ledger.shouldBroadcast(project: "p", until: 10_999)
        #expect(!announce4, "barely longer")
        let announce5 = ledger.shouldBroadcast(project: "p", until: 11_000)
        #expect(announce5, "extends by a second")
        let announce6 = ledger.shouldBroadcast(project: "other", until: 10_000)
        #expect(announce6, "another project")
    }

    @Test func aPauseHeardFromTheFleetSilencesTheSameLocalPause() {
        var ledger = FleetPauseLedger()
        ledger.received(project: "p", until: 20_000)
        let announce1 = ledger.shouldBroadcast(project: "p", until: 20_500)
        #expect(!announce1, "another replica already told everyone")
        let announce2 = ledger.shouldBroadcast(project: "p", until: 21_000)
        #expect(announce2)
    }

    @Test func aPauseHeardNeverShortensTheKnownOne() {
        var ledger = FleetPauseLedger()
        ledger.received(project: "p", until: 20_000)
        ledger.received(project: "p", until: 5_000)
        #expect(ledger.pausedUntil["p"] == 20_000)
    }

    @Test func endedPausesArePruned() {
        var ledger = FleetPauseLedger()
        ledger.received(project: "old", until: 1_000)
        ledger.received(project: "new", until: 9_000)
        ledger.prune(now: 5_000)
        #expect(ledger.pausedUntil == ["new": 9_000])
        let announce1 = ledger.shouldBroadcast(project: "old", until: 6_000)
        #expect(announce1, "a new pause after the old one ended")
    }
}

/// The control message `{project, paused_until}`.
@Suite(.timeLimit(.minutes(1))) struct QuotaPauseMessageTests {
    @Test func aMessageRoundTrips() throws {
        let message = QuotaPauseMessage(project: "shop-prod", pausedUntil: 1_700_000_060_000)
        #expect(String(decoding: message.encoded, as: UTF8.self) == #"{"paused_until":1700000060000,"project":"shop-prod"}"#
            || String(decoding: message.encoded, as: UTF8.self) == #"{"project":"shop-prod","paused_until":1700000060000}"#)
        #expect(try QuotaPauseMessage.decode(message.encoded, now: 1_700_000_000_000) == message)
    }

    @Test func malformedMessagesAreRefused() {
        let now: Int64 = 1_700_000_000_000
        for body in ["", "nope", "[]", #"{"paused_until":1700000001000}"#, #"{"project":"","paused_until":1700000001000}"#,
                     #"{"project":"Shop Prod","paused_until":1700000001000}"#, #"{"project":"p","paused_until":"soon"}"#,
                     #"{"project":"p"}"#, #"{"project":"p","paused_until":1.5}"#,
                     #"{"project":"p","paused_until":1700003600001}"#, String(repeating: "[", count: 100)] {
            #expect(throws: QuotaPauseMessage.Invalid.self, "\(body)") { try QuotaPauseMessage.decode(Array(body.utf8), now: now) }
        }
        #expect((try? QuotaPauseMessage.decode(Array(#"{"project":"p","paused_until":1700003600000}"#.utf8), now: now)) != nil)
    }
}
