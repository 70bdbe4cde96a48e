import Testing
@testable import FCM

/// `pausedProjects()` says how many projects are paused now and why (the paused-projects gauge).
@Suite struct PausedProjectsTests {
    @Test func pausesAreCountedByReasonUntilTheyEnd() {
        let clock = ManualClock()
        var configuration = ProjectRateLimiter.Configuration()
        configuration.minimumQuotaPause = .seconds(60)
        configuration.configurationPause = .seconds(30)
        let limiter = ProjectRateLimiter(configuration: configuration, now: { clock.now() })
        #expect(limiter.pausedProjects().isEmpty)
        limiter.recordQuotaExceeded(project: "a", retryAfter: nil)
        limiter.recordQuotaExceeded(project: "b", retryAfter: .seconds(120))
        #expect(limiter.recordSetupFault(project: "c", reason: .auth), "a pause started")
        #expect(limiter.recordSetupFault(project: "d", reason: .config))
        #expect(!limiter.recordSetupFault(project: "d", reason: .config), "already paused: no new start (no second log line)")
        #expect(limiter.pausedProjects() == [.quota: 2, .auth: 1, .config: 1])
        clock.advance(.seconds(31))
        #expect(limiter.pausedProjects() == [.quota: 2])
        clock.advance(.seconds(30))
        #expect(limiter.pausedProjects() == [.quota: 1], "b asked for 120 s")
        clock.advance(.seconds(60))
        #expect(limiter.pausedProjects().isEmpty)
    }

    @Test func aShorterPauseDoesNotHideALongerOne() {
        let clock = ManualClock()
        let limiter = ProjectRateLimiter(configuration: .init(), now: { clock.now() })
        limiter.recordQuotaExceeded(project: "a", retryAfter: .seconds(300))
        #expect(!limiter.recordSetupFault(project: "a", reason: .auth))
        #expect(limiter.pausedProjects() == [.quota: 1])
        #expect(limiter.pauseRemaining(project: "a") == .seconds(300))
    }
}
