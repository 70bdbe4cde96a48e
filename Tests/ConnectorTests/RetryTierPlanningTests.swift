import AMQP
import Foundation
import PushCore
@testable import PushWorker
import Testing
@testable import Connector

/// A sender that answers every send with one fixed outcome (pure planning: no network).
private struct FixedOutcomeSender: PushSender {
    let outcome: DeliveryOutcome
    func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void) {
        completion(outcome)
    }
}

/// Which retry tier queue a transient failure goes to, through `JobProcessor`: tiers
/// [5, 30, 120] s, no jitter, so the wanted delay is exactly the larger of the backoff (1 s),
/// the server's Retry-After and, for a quota error, FCM's one-minute minimum.
@Suite(.timeLimit(.minutes(1))) struct RetryTierPlanningTests {
    static let now = Timestamp(rfc3339: "2026-11-30T12:00:00Z")!
    static let app = AppConfiguration(appID: "shop-android", projectID: "shop-prod", credentialsFile: "/dev/null")

    func processor(answering outcome: DeliveryOutcome) -> JobProcessor {
        let policy = RetryPolicy(maxAttempts: 8, baseDelay: .seconds(1), maxDelay: .seconds(3600), jitter: 0)
        var processor = JobProcessor(registry: AppRegistry([Self.app]), sender: FixedOutcomeSender(outcome: outcome),
                                     topology: Topology(prefix: "t", retryDelaysSeconds: [120, 5, 30]),
                                     planner: JobPlanner(policy: policy))
        processor.clock = { Self.now }
        return processor
    }

    static let job = #"{"job_id":"tiers","app_id":"shop-android","notification":{"title":"T","body":"B"},"recipients":[{"token":"dev-a"}]}"#

    static func unavailable(retryAfter seconds: Int?) -> DeliveryOutcome {
        .retryable(ResultError(code: "UNAVAILABLE", httpStatus: 503, message: "The service is currently unavailable."),
                   retryAfter: seconds.map { .seconds($0) })
    }

    @Test(arguments: [
        (3, "5s", "t.retry.5s"),      // shorter than the first tier: the first tier
        (5, "5s", "t.retry.5s"),      // exactly a tier
        (20, "30s", "t.retry.30s"),   // between tiers: the next longer one, never a shorter one
        (30, "30s", "t.retry.30s"),
        (121, "2m", "t.retry.2m"),    // beyond the last tier: the last tier
        (86_400, "2m", "t.retry.2m"),
    ])
    func retryAfterPicksTheShortestTierAtLeastAsLong(retryAfter: Int, routingKey: String, queue: String) async throws {
        let out = await processor(answering: Self.unavailable(retryAfter: retryAfter))
            .process(body: Data(Self.job.utf8), headers: [:])
        #expect(out.count == 1, "a retry copy only, no result and no dead letter: \(out.map(\.kind))")
        let retry = try #require(out.first { $0.kind == .retry })
        #expect(retry.exchange == "t.retry")
        #expect(retry.routingKey == routingKey)
        let topology = Topology(prefix: "t", retryDelaysSeconds: [5, 30, 120])
        #expect(topology.bindings.contains { $0.queue == queue && $0.exchange == "t.retry" && $0.routingKey == routingKey })
        #expect(retry.headers == ["push-attempt": .int(1), "push-first-failed-at": .string("2026-11-30T12:00:00Z")])
        // The same job, each recipient now carrying its resolved mn_message_id explicitly.
        let copy = try SendJob.decode(retry.body)
        guard case .recipients(let list) = copy.target, list.count == 1, let id = list[0].mnMessageID else {
            Issue.record("the copy lost its recipient or its id: \(copy.target)"); return
        }
        #expect(MessageID.isWellFormed(id))
        var expected = try SendJob.decode(Array(Self.job.utf8))
        expected.target = .recipients([Recipient(token: "dev-a", mnMessageID: id)])
        #expect(copy == expected)
    }

    @Test func quotaErrorWaitsAtLeastAMinuteSoItGoesToTheTwoMinuteTier() async throws {
        let quota = DeliveryOutcome.retryable(ResultError(code: "QUOTA_EXCEEDED", httpStatus: 429, message: "Quota exceeded"),
                                              retryAfter: .seconds(3), overQuota: true)
        let out = await processor(answering: quota).process(body: Data(Self.job.utf8), headers: [:])
        let retry = try #require(out.first { $0.kind == .retry })
        #expect(retry.routingKey == "2m")
    }

    @Test func noRetryAfterUsesTheBackoffAndTheFirstTier() async throws {
        let out = await processor(answering: Self.unavailable(retryAfter: nil)).process(body: Data(Self.job.utf8), headers: [:])
        #expect(out.first { $0.kind == .retry }?.routingKey == "5s")
    }

    @Test func aLaterAttemptCarriesItsCountFirstFailureAndReplaysButNoBrokerHeaders() async throws {
        let headers: AMQPTable = ["push-attempt": .int(2), "push-first-failed-at": .string("2026-11-30T11:59:00Z"),
                                  "push-replays": .int(1), "x-death": .array([.table(["queue": "t.retry.5s", "reason": "expired"])]),
                                  "x-first-death-queue": "t.retry.5s"]
        let out = await processor(answering: Self.unavailable(retryAfter: 20)).process(body: Data(Self.job.utf8), headers: headers)
        let retry = try #require(out.first { $0.kind == .retry })
        #expect(retry.routingKey == "30s")
        #expect(retry.headers == ["push-attempt": .int(3), "push-first-failed-at": .string("2026-11-30T11:59:00Z"),
                                  "push-replays": .int(1)])
    }

    @Test func onlyTheFailedRecipientsTravelInTheRetryCopy() async throws {
        struct PerToken: PushSender {
            func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void) {
                completion(String(decoding: body, as: UTF8.self).contains("dev-slow")
                    ? RetryTierPlanningTests.unavailable(retryAfter: 20) : .sent(messageName: "projects/shop-prod/messages/1"))
            }
        }
        let processor = processor(answering: .sent(messageName: "unused"))
        processor.catalog.replace(with: .init(registry: AppRegistry([Self.app]), sender: PerToken()))
        let job = #"{"job_id":"two","app_id":"shop-android","notification":{"title":"T"},"recipients":[{"token":"dev-ok"},{"token":"dev-slow"}]}"#
        let out = await processor.process(body: Data(job.utf8), headers: [:])
        #expect(out.map(\.kind) == [.result, .retry])
        #expect(out[0].routingKey == "shop-android.sent")
        #expect(out[1].routingKey == "30s")
        let copy = try SendJob.decode(out[1].body)
        guard case .recipients(let list) = copy.target else { Issue.record("no recipients in the copy"); return }
        #expect(list.map(\.token) == ["dev-slow"])
    }
}
