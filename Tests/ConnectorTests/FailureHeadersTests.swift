@testable import AMQP
import Foundation
import PushCore
@testable import PushWorker
import Testing
@testable import Connector

/// The `push-*` failure headers: written, read back, clamped and stripped by one owner
/// (`FailureHeaders`). Pure: no broker.
@Suite(.timeLimit(.minutes(1))) struct FailureHeadersTests {
    static let first = Timestamp(rfc3339: "2026-11-30T11:59:00Z")!
    static let now = Timestamp(rfc3339: "2026-11-30T12:00:00Z")!

    @Test func aRetryCopyReadsBackAsTheHistoryOfItsNextDelivery() {
        let history = DeliveryHistory(attemptsMade: 2, firstFailedAt: Self.first, replays: 3)
        let headers = FailureHeaders.retry(attempts: 3, history: history, now: Self.now)
        #expect(headers == ["push-attempt": .int(3), "push-first-failed-at": .string("2026-11-30T11:59:00Z"), "push-replays": .int(3)])
        #expect(FailureHeaders.history(headers) == DeliveryHistory(attemptsMade: 3, firstFailedAt: Self.first, replays: 3))
    }

    @Test func onlyACopyBackFromARetryTierOrAReplayCarriesItsHistory() {
        let written = FailureHeaders.retry(attempts: 2, history: DeliveryHistory(firstFailedAt: Self.first, replays: 4), now: Self.now)
        let tiers = ["push.retry.5s", "push.retry.30s"]
        func death(_ queue: String, _ reason: String) -> AMQPTable {
            ["x-death": .array([.table(["queue": .string(queue), "reason": .string(reason), "count": .int(1)])])]
        }
        let full = DeliveryHistory(attemptsMade: 2, firstFailedAt: Self.first, replays: 4)
        #expect(FailureHeaders.trustedHistory(written.merging(death("push.retry.30s", "expired")) { a, _ in a }, retryQueues: tiers) == full)
        #expect(FailureHeaders.trustedHistory(written, retryQueues: tiers) == DeliveryHistory(), "published straight to the job queue")
        #expect(FailureHeaders.trustedHistory(written.merging(death("push.jobs", "expired")) { a, _ in a }, retryQueues: tiers) == DeliveryHistory())
        #expect(FailureHeaders.trustedHistory(written.merging(death("push.retry.5s", "rejected")) { a, _ in a }, retryQueues: tiers) == DeliveryHistory())
        let replay = FailureHeaders.replayed(written, replays: 4)
        #expect(FailureHeaders.trustedHistory(replay, retryQueues: tiers) == DeliveryHistory(replays: 5))
    }

    @Test func aFirstFailureIsDatedNowAndNoReplayCountIsWrittenForANeverReplayedJob() {
        let headers = FailureHeaders.retry(attempts: 1, history: DeliveryHistory(), now: Self.now)
        #expect(headers == ["push-attempt": .int(1), "push-first-failed-at": .string("2026-11-30T12:00:00Z")])
        #expect(FailureHeaders.history(headers) == DeliveryHistory(attemptsMade: 1, firstFailedAt: Self.now, replays: 0))
    }

    @Test func aDeadLetterRecordsWhyTheAttemptsTheFailureTimesAndTheReplays() throws {
        let long = String(repeating: "é", count: 1500)
        let headers = FailureHeaders.deadLetter(code: "RETRIES_EXHAUSTED", message: long,
                                                history: DeliveryHistory(attemptsMade: 4, firstFailedAt: Self.first, replays: 1), now: Self.now)
        #expect(headers == ["push-error-code": "RETRIES_EXHAUSTED", "push-error-message": .string(String(repeating: "é", count: 1000)),
                            "push-attempts": .int(4), "push-first-failed-at": "2026-11-30T11:59:00Z",
                            "push-last-failed-at": "2026-11-30T12:00:00Z", "push-replays": .int(1)])
        let recorded = try #require(FailureHeaders.recorded(headers))
        #expect(recorded == FailureHeaders.Recorded(code: "RETRIES_EXHAUSTED", message: String(repeating: "é", count: 1000), attempts: 4,
                                                    firstFailedAt: Self.first, lastFailedAt: Self.now))
        #expect(FailureHeaders.history(headers).replays == 1)
        #expect(FailureHeaders.recorded(["push-attempts": 4]) == nil, "no push-error-code: no recorded failure")
    }

    @Test(arguments: [
        (AMQPFieldValue.int(Int64.max), 1_000_000), (.int(1_000_001), 1_000_000), (.int(-5), 0), (.int(7), 7),
        (.string("7"), 7), (.double(3), 3), (.string("seven"), 0), (.double(2.5), 0), (.bool(true), 0), (.void, 0),
        (.array([.int(3)]), 0),
    ])
    func countsWrittenByAPublisherAreClampedAndGarbageCountsAsNone(value: AMQPFieldValue, expected: Int) {
        let history = FailureHeaders.history(["push-attempt": value, "push-replays": value])
        #expect(history.attemptsMade == expected)
        #expect(history.replays == expected)
    }

    @Test func aFirstFailureTimeThatIsNoTimeCountsAsNone() {
        #expect(FailureHeaders.history(["push-first-failed-at": "yesterday"]).firstFailedAt == nil)
        #expect(FailureHeaders.history(["push-first-failed-at": 1_700_000_000]).firstFailedAt == nil)
        #expect(FailureHeaders.history(["push-first-failed-at": .timestamp(Date(timeIntervalSince1970: 1_795_000_000))]).firstFailedAt
                == Timestamp(secondsSince1970: 1_795_000_000))
        #expect(FailureHeaders.history([:]) == DeliveryHistory(attemptsMade: 0, firstFailedAt: nil, replays: 0))
    }

    static let mixed: AMQPTable = [
        "push-attempt": 2, "push-error-code": "UNKNOWN_APP", "push-source-queue": "q", "push-anything-new": true,
        "x-death": .array([]), "x-delivery-count": 3, "x-first-death-queue": "t.jobs",
        "trace-id": "abc", "pushy": "kept", "X-Upper": "kept", "xray": 1,
    ]

    @Test func strippingRemovesExactlyTheConnectorAndBrokerHeaders() {
        #expect(FailureHeaders.stripped(Self.mixed) == ["trace-id": "abc", "pushy": "kept", "X-Upper": "kept", "xray": 1])
    }

    @Test func aReplayBumpsTheCountOnTheStrippedHeadersAndMarksTheCopy() {
        #expect(FailureHeaders.replayed(Self.mixed, replays: 2)
                == ["push-replays": 3, "push-copy": "replay", "trace-id": "abc", "pushy": "kept", "X-Upper": "kept", "xray": 1])
        #expect(FailureHeaders.replayed([:], replays: 0) == ["push-replays": 1, "push-copy": "replay"])
        #expect(FailureHeaders.replayed([:], replays: Int.max) == ["push-replays": 1_000_001, "push-copy": "replay"])
        #expect(FailureHeaders.replayed([:], replays: -4) == ["push-replays": 1, "push-copy": "replay"])
    }

    @Test func anEventsDeadLetterKeepsTheDeliveryHeadersAndAddsWhyAndWhere() {
        let headers = FailureHeaders.eventDeadLetter(["trace-id": "abc", "x-delivery-count": 2], code: "INVALID_EVENT",
                                                     message: "missing event_type", sourceQueue: "push.events")
        #expect(headers == ["trace-id": "abc", "x-delivery-count": 2, "push-error-code": "INVALID_EVENT",
                            "push-error-message": "missing event_type", "push-source-queue": "push.events"])
        #expect(FailureHeaders.recorded(headers)?.message == "missing event_type")
    }
}

/// `JobProcessor` reads a delivery's history once and writes it into what it publishes.
@Suite(.timeLimit(.minutes(1))) struct JobProcessorHistoryTests {
    static let app = AppConfiguration(appID: "shop-android", projectID: "shop-prod", credentialsFile: "/dev/null")

    private struct Denied: PushSender {
        func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void) {
            completion(.configurationFailed(ResultError(code: "PERMISSION_DENIED", httpStatus: 403, message: "denied"), .permissionDenied))
        }
    }

    func processor() -> JobProcessor {
        var processor = JobProcessor(registry: AppRegistry([Self.app]), sender: Denied(), topology: Topology(prefix: "t"))
        processor.clock = { FailureHeadersTests.now }
        return processor
    }

    /// A retry copy back from its tier (the broker's `x-death` names the tier queue).
    static let later: AMQPTable = ["push-attempt": 2, "push-first-failed-at": "2026-11-30T11:59:00Z", "push-replays": 1,
                                   "x-death": .array([.table(["queue": "t.retry.5s", "reason": "expired"])]), "trace-id": "abc"]

    static func job(app: String) -> Data {
        Data(#"{"job_id":"h1","app_id":"\#(app)","notification":{"title":"T"},"recipients":[{"token":"dev-a"}]}"#.utf8)
    }

    @Test func aJobDeadLetteredBeforeItIsTriedRecordsOnlyTheEarlierAttempts() async throws {
        let processed = await processor().processJob(body: Self.job(app: "nope"), headers: Self.later)
        #expect(processed.record.attempt == 3)
        let dead = try #require(processed.messages.first { $0.kind == .deadLetter })
        #expect(dead.headers == ["push-error-code": "UNKNOWN_APP", "push-error-message": .string(try #require(dead.reason)),
                                 "push-attempts": 2, "push-first-failed-at": "2026-11-30T11:59:00Z",
                                 "push-last-failed-at": "2026-11-30T12:00:00Z", "push-replays": 1])
        #expect(dead.reason?.hasPrefix("unknown App ID \"nope\"") == true)
        let result = try SendResult.decode(JSONValue.parse(try #require(processed.messages.first { $0.kind == .result }).body))
        #expect(result.replays == 1 && result.attempts == 2)
    }

    @Test func aJobDeadLetteredAfterItWasTriedCountsThisAttempt() async throws {
        let processed = await processor().processJob(body: Self.job(app: "shop-android"), headers: Self.later)
        let dead = try #require(processed.messages.first { $0.kind == .deadLetter })
        #expect(dead.label == "PERMISSION_DENIED")
        #expect(dead.headers["push-attempts"] == .int(3))
        #expect(dead.headers["push-first-failed-at"] == "2026-11-30T11:59:00Z" && dead.headers["push-replays"] == .int(1))
        #expect(dead.headers["x-death"] == nil && dead.headers["trace-id"] == nil)
    }
}
