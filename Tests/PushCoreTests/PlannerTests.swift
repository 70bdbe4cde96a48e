import Testing
@testable import PushCore

/// A deterministic generator for jitter in tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite(.timeLimit(.minutes(1))) struct RetryPolicyTests {
    @Test func delayGrowsExponentiallyWithinJitterAndCap() {
        var rng = SeededGenerator(state: 1)
        let policy = RetryPolicy(baseDelay: .seconds(5), maxDelay: .seconds(600), jitter: 0.2)
        for attempt in 1...10 {
            let d = policy.delay(afterAttempt: attempt, retryAfter: nil, isQuota: false, using: &rng).seconds
            let nominal = min(5 * Double(1 << (attempt - 1)), 600)
            #expect(d >= nominal * 0.8 - 0.001 && d <= min(nominal * 1.2, 600) + 0.001, "attempt \(attempt): \(d)")
        }
    }

    @Test func retryAfterAndQuotaMinimumWinOverBackoff() {
        var rng = SeededGenerator(state: 2)
        let policy = RetryPolicy(baseDelay: .seconds(1), jitter: 0)
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(42), isQuota: false, using: &rng) == .seconds(42))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(10), isQuota: true, using: &rng) == .seconds(60))
    }

    @Test func exhaustedByAttemptsOrByAge() {
        let policy = RetryPolicy(maxAttempts: 3, maxAge: .seconds(100))
        let t0 = Timestamp(secondsSince1970: 1000)
        #expect(!policy.isExhausted(attempts: 2, firstFailedAt: t0, now: Timestamp(secondsSince1970: 1050)))
        #expect(policy.isExhausted(attempts: 3, firstFailedAt: t0, now: Timestamp(secondsSince1970: 1050)))
        #expect(policy.isExhausted(attempts: 1, firstFailedAt: t0, now: Timestamp(secondsSince1970: 1100)))
    }

}

@Suite(.timeLimit(.minutes(1))) struct JobPlannerTests {
    let now = Timestamp(secondsSince1970: 1_800_000_000)

    func job(_ tokens: [String]) throws -> SendJob {
        let list = tokens.map { #"{"token":"\#($0)"}"# }.joined(separator: ",")
        return try Fixtures.job(#"{"job_id":"j","app_id":"shop-android","campaign":"C","notification":{"title":"T"},"recipients":[\#(list)]}"#)
    }

    func plan(_ job: SendJob, attempt: Int = 1, _ delivered: [Int: DeliveryOutcome], policy: RetryPolicy = RetryPolicy()) throws -> JobPlan {
        var rng = SeededGenerator(state: 7)
        let composed = try MessageComposer().compose(job, app: Fixtures.app)
        return JobPlanner(policy: policy).plan(job: job, attempt: attempt, composed: composed, delivered: delivered,
                                               firstFailedAt: nil, now: now, random: &rng)
    }

    @Test func eachRecipientGetsItsFinalResult() throws {
        let p = try plan(job(["a", "b", "c"]), [0: .sent(messageName: "projects/p/messages/1"),
                                                 1: .invalidToken(ResultError(code: "UNREGISTERED", httpStatus: 404, message: "gone")),
                                                 2: .rejected(ResultError(code: "INVALID_ARGUMENT", httpStatus: 400, message: "bad"))])
        #expect(p.results.map(\.outcome) == [.sent, .invalidToken, .rejected])
        #expect(p.results.map(\.routingKey) == ["shop-android.sent", "shop-android.invalid_token", "shop-android.rejected"])
        #expect(p.results[0].fcmMessageName == "projects/p/messages/1")
        #expect(p.results.allSatisfy { $0.campaign == "C" && $0.attempts == 1 })
        #expect(p.retry == nil && p.deadLetters.isEmpty)
    }

    /// FCM's answer was cut after its 200 status: the push went out, its message name is unknown,
    /// and the result says so by leaving `fcm_message_name` out rather than writing "".
    @Test func aSendWhoseAnswerWasCutIsSentWithoutAMessageName() throws {
        let p = try plan(job(["a"]), [0: .sent(messageName: "")])
        #expect(p.results.map(\.outcome) == [.sent])
        #expect(p.results[0].fcmMessageName == nil)
        #expect(!String(decoding: p.results[0].encodedBytes(), as: UTF8.self).contains("fcm_message_name"))
        #expect(p.retry == nil && p.deadLetters.isEmpty)
    }

    @Test func transientFailuresAreRetriedAloneWithTheirIDs() throws {
        let j = try job(["a", "b"])
        let p = try plan(j, [0: .sent(messageName: "n"), 1: .retryable(ResultError(code: "UNAVAILABLE", httpStatus: 503, message: ""), retryAfter: .seconds(20))])
        #expect(p.results.count == 1)
        let retry = try #require(p.retry)
        guard case .recipients(let list) = retry.job.target else { Issue.record("not recipients"); return }
        #expect(list.map(\.token) == ["b"])
        #expect(list.first?.mnMessageID == MessageID.generate(jobID: "j", index: 1))
        #expect(retry.delay >= .seconds(20))
    }

    @Test func lastAttemptDeadLettersAsRetriesExhausted() throws {
        let p = try plan(job(["a"]), attempt: 3, [0: .retryable(ResultError(code: "UNAVAILABLE", httpStatus: 503, message: ""), retryAfter: nil)],
                         policy: RetryPolicy(maxAttempts: 3))
        #expect(p.retry == nil)
        #expect(p.deadLetters.map(\.code) == [.retriesExhausted])
        #expect(p.deadLetters.first?.message.contains("3 attempt") == true)
        #expect(p.results.map(\.outcome) == [.deadLettered])
        #expect(p.results.first?.error?.code == "RETRIES_EXHAUSTED" && p.results.first?.attempts == 3)
    }

    @Test func aSendHeldBackByAPausedProjectDoesNotSpendAnAttempt() throws {
        let paused = ResultError(code: "PROJECT_PAUSED", message: "paused")
        let p = try plan(job(["a"]), attempt: 3, [0: .deferred(paused, retryAfter: .seconds(45))],
                         policy: RetryPolicy(maxAttempts: 3, jitter: 0))
        #expect(p.deadLetters.isEmpty)
        let retry = try #require(p.retry)
        #expect(retry.attempts == 2)
        #expect(retry.delay == .seconds(45))
    }

    @Test func anAttemptCountsWhenOneRecipientStillToSendReachedFCM() throws {
        let p = try plan(job(["a", "b"]), attempt: 3,
                         [0: .deferred(ResultError(code: "PROJECT_PAUSED", message: ""), retryAfter: .seconds(5)),
                          1: .retryable(ResultError(code: "UNAVAILABLE", httpStatus: 503, message: ""), retryAfter: nil)],
                         policy: RetryPolicy(maxAttempts: 3))
        #expect(p.retry == nil)
        #expect(p.deadLetters.map(\.code) == [.retriesExhausted])
    }

    @Test func aPausedProjectStillRunsOutOfRetryAge() throws {
        var rng = SeededGenerator(state: 7)
        let j = try job(["a"])
        let composed = try MessageComposer().compose(j, app: Fixtures.app)
        let p = JobPlanner(policy: RetryPolicy(maxAge: .seconds(100)))
            .plan(job: j, attempt: 2, composed: composed,
                  delivered: [0: .deferred(ResultError(code: "PROJECT_PAUSED", message: ""), retryAfter: .seconds(5))],
                  firstFailedAt: Timestamp(secondsSince1970: now.secondsSince1970 - 100), now: now, random: &rng)
        #expect(p.retry == nil)
        #expect(p.deadLetters.map(\.code) == [.retriesExhausted])
    }

    @Test func configurationFailuresDeadLetterByTheirFault() throws {
        let p = try plan(job(["a", "b", "c", "d"]), [0: .configurationFailed(ResultError(code: "THIRD_PARTY_AUTH_ERROR", httpStatus: 401, message: "apns"), .thirdPartyAuth),
                                                 1: .authFailed(ResultError(code: "UNAUTHENTICATED", httpStatus: 401, message: "token")),
                                                 2: .configurationFailed(ResultError(code: "PERMISSION_DENIED", httpStatus: 403, message: "no"), .permissionDenied),
                                                 3: .configurationFailed(ResultError(code: "NOT_FOUND", httpStatus: 404, message: "no project"))])
        #expect(Set(p.deadLetters.map(\.code)) == [.authFailed, .configuration, .thirdPartyAuthError, .permissionDenied], "the fault decides")
        let configuration = try #require(p.deadLetters.first { $0.code == .configuration })
        #expect(configuration.job.target.count == 1 && configuration.job.target.member(0).value == "d")
    }

    @Test func configurationFailuresDeadLetterByCode() throws {
        let p = try plan(job(["a", "b", "c"]), [0: .configurationFailed(ResultError(code: "THIRD_PARTY_AUTH_ERROR", httpStatus: 401, message: "apns"), .thirdPartyAuth),
                                                 1: .authFailed(ResultError(code: "UNAUTHENTICATED", httpStatus: 401, message: "token")),
                                                 2: .configurationFailed(ResultError(code: "PERMISSION_DENIED", httpStatus: 403, message: "no"), .permissionDenied)])
        #expect(p.deadLetters.map(\.code) == [.authFailed, .thirdPartyAuthError, .permissionDenied])
        // Every dead-lettered recipient still gets a result, with its code and reason.
        #expect(p.results.map(\.outcome) == [.deadLettered, .deadLettered, .deadLettered])
        #expect(p.results.map(\.target.value) == ["b", "a", "c"])
        #expect(p.results.map { $0.error?.code } == ["AUTH_FAILED", "THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED"])
        #expect(p.results[0].error?.message == "UNAUTHENTICATED: token")
        #expect(p.results.map(\.mnMessageID) == [1, 0, 2].map { MessageID.generate(jobID: "j", index: $0) })
        #expect(p.results.allSatisfy { $0.routingKey == "shop-android.dead_lettered" && $0.attempts == 1 })
    }

    @Test func invalidRecipientIsRejectedWithItsRuleCode() throws {
        let j = try Fixtures.job(#"{"job_id":"j","app_id":"a","notification":{"title":"T"},"recipients":[{"token":"a","data":{"gcm.x":"1"}}]}"#)
        let p = try plan(j, [:])
        #expect(p.results.map(\.outcome) == [.rejected])
        #expect(p.results.first?.error?.code == "RESERVED_DATA_KEY")
    }

    @Test func expiredJobEndsEveryTargetExpired() throws {
        let p = JobPlanner().expired(try job(["a", "b"]), attempts: 1, now: now)
        #expect(p.results.map(\.outcome) == [.expired, .expired])
    }

    @Test func validateOnlyJobsEndValidated() throws {
        var j = try job(["a"])
        j.validateOnly = true
        #expect(try plan(j, [0: .sent(messageName: "n")]).results.map(\.outcome) == [.validated])
    }
}

/// Values that come from outside are bounded before arithmetic.
@Suite(.timeLimit(.minutes(1))) struct HostileValueTests {
    @Test func aHugeRetryAfterIsClampedToTheRetryBudget() {
        var rng = SeededGenerator(state: 3)
        let policy = RetryPolicy(maxAge: .seconds(86_400))
        let delay = policy.delay(afterAttempt: 1, retryAfter: .seconds(Int64.max / 1_000_000_000_000), isQuota: false, using: &rng)
        #expect(delay <= .seconds(86_400))
    }

    @Test func anAbsurdTimestampStillPrints() {
        #expect(Timestamp(secondsSince1970: 1e300).description == "9999-12-31T23:59:59Z")
        #expect(Timestamp(secondsSince1970: .nan).description == "1970-01-01T00:00:00Z")
    }
}
