import Synchronization
import Testing
@testable import FCM

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)
    func now() -> ContinuousClock.Instant { instant.withLock { $0 } }
    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
}

@Suite(.timeLimit(.minutes(1))) struct ProjectRateLimiterTests {
    private func limiter(perMinute: Int, burst: Int, clock: ManualClock, maxWait: Duration = .seconds(5),
                         minimumPause: Duration = .seconds(60)) -> ProjectRateLimiter {
        var configuration = ProjectRateLimiter.Configuration()
        configuration.perMinute = perMinute
        configuration.burst = burst
        configuration.maxWait = maxWait
        configuration.minimumQuotaPause = minimumPause
        return ProjectRateLimiter(configuration: configuration, now: { clock.now() })
    }

    @Test func burstIsGrantedThenWaitsFollowTheRate() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 60, burst: 2, clock: clock) // one per second
        #expect(limiter.reserve(project: "p") == .granted)
        #expect(limiter.reserve(project: "p") == .granted)
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(1)))
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(2)))
        clock.advance(.seconds(3))
        #expect(limiter.reserve(project: "p") == .granted)
    }

    @Test func projectsHaveSeparateBuckets() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 60, burst: 1, clock: clock)
        #expect(limiter.reserve(project: "a") == .granted)
        #expect(limiter.reserve(project: "b") == .granted)
        #expect(limiter.reserve(project: "a") == .grantedAfter(.seconds(1)))
    }

    @Test func waitBeyondTheLimitIsDeferredWithoutTakingAToken() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 60, burst: 1, clock: clock, maxWait: .milliseconds(500))
        #expect(limiter.reserve(project: "p") == .granted)
        #expect(limiter.reserve(project: "p") == .deferred(.seconds(1)))
        clock.advance(.seconds(1))
        #expect(limiter.reserve(project: "p") == .granted)
    }

    @Test func quotaErrorPausesTheWholeProjectForAtLeastTheMinimum() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 600_000, burst: 10_000, clock: clock)
        limiter.recordQuotaExceeded(project: "p", retryAfter: .seconds(10))
        #expect(limiter.pauseRemaining(project: "p") == .seconds(60))
        #expect(limiter.reserve(project: "p") == .deferred(.seconds(60)))
        #expect(limiter.reserve(project: "other") == .granted)
        clock.advance(.seconds(59))
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(1)))
        clock.advance(.seconds(1))
        #expect(limiter.reserve(project: "p") == .granted)
    }

    @Test func longerRetryAfterWinsAndPausesNeverShorten() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 600, burst: 10, clock: clock)
        limiter.recordQuotaExceeded(project: "p", retryAfter: .seconds(120))
        limiter.recordQuotaExceeded(project: "p", retryAfter: nil)
        #expect(limiter.pauseRemaining(project: "p") == .seconds(120))
    }

    @Test func asyncAcquireWaitsOutAShortPause() async {
        var configuration = ProjectRateLimiter.Configuration()
        configuration.minimumQuotaPause = .milliseconds(50)
        let limiter = ProjectRateLimiter(configuration: configuration)
        limiter.recordQuotaExceeded(project: "p", retryAfter: nil)
        let start = ContinuousClock.now
        #expect(await limiter.acquire(project: "p") == .granted)
        #expect(ContinuousClock.now - start >= .milliseconds(50))
    }

    @Test func asyncAcquireDefersALongPause() async {
        let clock = ManualClock()
        let limiter = ProjectRateLimiter(now: { clock.now() })
        limiter.recordQuotaExceeded(project: "p", retryAfter: .seconds(90))
        clock.advance(.seconds(1))
        guard case .deferred(let delay) = await limiter.acquire(project: "p") else {
            Issue.record("expected a deferral")
            return
        }
        #expect(delay == .seconds(89))
    }
}

/// `rate_limit_per_minute` of an App ID becomes its project's rate in this process.
@Suite(.timeLimit(.minutes(1))) struct ProjectLimitTests {
    @Test func aProjectLimitReplacesTheDefaultRateOfThatProjectOnly() {
        let clock = ManualClock()
        var configuration = ProjectRateLimiter.Configuration()
        configuration.perMinute = 600_000
        let limiter = ProjectRateLimiter(configuration: configuration, now: { clock.now() })
        limiter.setLimits(["slow": 60])  // one per second, a burst of one
        #expect(limiter.reserve(project: "slow") == .granted)
        #expect(limiter.reserve(project: "slow") == .grantedAfter(.seconds(1)))
        // Another project keeps the default: a second's worth (10 000) at once.
        for _ in 0..<100 { #expect(limiter.reserve(project: "fast") == .granted) }
        // Lifting the limit gives the project a fresh bucket at the default rate.
        limiter.setLimits([:])
        for _ in 0..<100 { #expect(limiter.reserve(project: "slow") == .granted) }
    }

    @Test func aNewLimitKeepsAPauseTheProjectIsUnder() {
        let clock = ManualClock()
        let limiter = ProjectRateLimiter(configuration: .init(), now: { clock.now() })
        _ = limiter.reserve(project: "p")
        limiter.recordQuotaExceeded(project: "p", retryAfter: .seconds(120))
        limiter.setLimits(["p": 6_000])
        #expect(limiter.pauseRemaining(project: "p") == .seconds(120))
    }
}

/// The fleet side of the limiter: a share of the rate, pauses told and applied.
@Suite(.timeLimit(.minutes(1))) struct FleetRateLimiterTests {
    private func limiter(perMinute: Int, burst: Int, clock: ManualClock) -> ProjectRateLimiter {
        var configuration = ProjectRateLimiter.Configuration()
        configuration.perMinute = perMinute
        configuration.burst = burst
        configuration.minimumQuotaPause = .seconds(1)
        return ProjectRateLimiter(configuration: configuration, now: { clock.now() })
    }

    @Test func aShareScalesTheRateAndTheBurst() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 180, burst: 3, clock: clock)  // 3/s, burst 3
        limiter.setShare(1.0 / 3)  // 60/min: one per second, burst 1
        #expect(limiter.effectiveLimit(project: "p") == 60)
        #expect(limiter.limit(project: "p") == 180)
        #expect(limiter.reserve(project: "p") == .granted)
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(1)))
    }

    @Test func aShareChangeRescalesLiveBucketsWithoutAFreshBurst() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 120, burst: 2, clock: clock)  // 2/s
        #expect(limiter.reserve(project: "p") == .granted)
        #expect(limiter.reserve(project: "p") == .granted)
        limiter.setShare(0.5)  // 1/s, burst 1: the emptied bucket stays empty
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(1)))
    }

    @Test func aShareKeepsAnAppIDLimitScaledToo() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 600_000, burst: 10_000, clock: clock)
        limiter.setLimits(["small": 600])
        limiter.setShare(0.25)
        #expect(limiter.effectiveLimit(project: "small") == 150)
        #expect(limiter.effectiveLimit(project: "big") == 150_000)
    }

    @Test func sendsWaitingOutAPauseLeaveAtTheRateAfterItNotAllAtOnce() {
        let clock = ManualClock()
        var configuration = ProjectRateLimiter.Configuration()
        configuration.perMinute = 60  // one a second
        configuration.burst = 1
        configuration.maxWait = .seconds(30)
        configuration.minimumQuotaPause = .seconds(5)
        let limiter = ProjectRateLimiter(configuration: configuration, now: { clock.now() })
        #expect(limiter.reserve(project: "p") == .granted)
        limiter.recordQuotaExceeded(project: "p", retryAfter: nil)
        clock.advance(.seconds(2))
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(4)), "3 s of pause left + 1 s for a token")
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(5)))
        #expect(limiter.reserve(project: "p") == .grantedAfter(.seconds(6)))
    }

    @Test func aLocalQuotaPauseIsToldOnceAndAFleetPauseIsNot() {
        let clock = ManualClock()
        let limiter = limiter(perMinute: 600, burst: 10, clock: clock)
        let told = Mutex<[String]>([])
        limiter.onQuotaPause { project, pause in told.withLock { $0.append("\(project) \(pause)") } }
        limiter.recordQuotaExceeded(project: "p", retryAfter: .seconds(7))
        #expect(told.withLock { $0 } == ["p 7.0 seconds"])
        #expect(limiter.pauseRemaining(project: "p") == .seconds(7))
        limiter.applyFleetPause(project: "q", for: .seconds(9))
        #expect(told.withLock { $0 }.count == 1, "a pause heard from the fleet is not told again")
        #expect(limiter.pauseRemaining(project: "q") == .seconds(9))
        #expect(limiter.pausedProjects() == [.quota: 2])
        limiter.applyFleetPause(project: "q", for: .seconds(2))
        #expect(limiter.pauseRemaining(project: "q") == .seconds(9), "never shortened")
    }
}
