import Synchronization
import Testing
@testable import FCM

/// `PacingLine`: sends over their project's rate wait in line for turns within `maxWait`,
/// unless another project is sending at once (then they are deferred, as before).
@Suite(.timeLimit(.minutes(1))) struct PacingLineTests {
    /// The line's timers, fired by hand.
    final class ManualTimers: Sendable {
        private let pending = Mutex<[(at: ContinuousClock.Instant, action: @Sendable () -> Void)]>([])
        let clock: ManualClock
        init(_ clock: ManualClock) { self.clock = clock }
        func schedule(_ delay: Duration, _ action: @escaping @Sendable () -> Void) {
            let at = clock.now() + delay
            pending.withLock { $0.append((at, action)) }
        }
        /// Advances the clock by `duration`, firing what falls due, in order.
        func advance(_ duration: Duration) {
            let end = clock.now() + duration
            while true {
                let next = pending.withLock { p -> (at: ContinuousClock.Instant, action: @Sendable () -> Void)? in
                    guard let i = p.indices.filter({ p[$0].at <= end }).min(by: { p[$0].at < p[$1].at }) else { return nil }
                    return p.remove(at: i)
                }
                guard let next else { break }
                if next.at > clock.now() { clock.advance(clock.now().duration(to: next.at)) }
                next.action()
            }
            if end > clock.now() { clock.advance(clock.now().duration(to: end)) }
        }
    }

    /// What each send was told, by its number.
    final class Answers: Sendable {
        private let told = Mutex<[Int: Bool]>([:])
        func go(_ n: Int) -> @Sendable (Bool) -> Void { { placed in self.told.withLock { $0[n] = placed } } }
        var placed: [Int] { told.withLock { $0.filter { $0.value }.keys.sorted() } }
        var deferred: [Int] { told.withLock { $0.filter { !$0.value }.keys.sorted() } }
    }

    func setUp(perMinute: Int = 60, maxHeldWait: Duration = .seconds(300)) -> (ManualClock, ManualTimers, ProjectRateLimiter, PacingLine) {
        let clock = ManualClock()
        let timers = ManualTimers(clock)
        var configuration = ProjectRateLimiter.Configuration()
        configuration.perMinute = perMinute
        configuration.burst = 1
        configuration.maxHeldWait = maxHeldWait
        let limiter = ProjectRateLimiter(configuration: configuration, now: { clock.now() })
        let line = PacingLine(limiter: limiter, now: { clock.now() }, schedule: { timers.schedule($0, $1) })
        return (clock, timers, limiter, line)
    }

    @Test func sendsBeyondTheShortWaitWaitInLineAndLeaveInOrderAtTheRate() {
        let (_, timers, _, line) = setUp()  // one a second, maxWait 5 s
        let answers = Answers()
        for n in 0..<20 { line.enter(project: "p", go: answers.go(n)) }
        #expect(answers.placed == [0], "the burst goes at once")
        #expect(line.waiting(project: "p") == 14, "turns within 5 s are reserved; the rest wait in line")
        timers.advance(.milliseconds(10_500))
        #expect(answers.placed == Array(0...10))
        timers.advance(.seconds(10))
        #expect(answers.placed == Array(0..<20), "every send got its turn, in order")
        #expect(answers.deferred.isEmpty, "nothing was deferred to a retry tier")
        #expect(line.waiting(project: "p") == 0)
    }

    @Test func aRateChangeAppliesToTheSendsInLine() {
        let (_, timers, limiter, line) = setUp(perMinute: 60)
        let answers = Answers()
        for n in 0..<30 { line.enter(project: "p", go: answers.go(n)) }
        limiter.setLimits(["p": 600])  // ten a second: the line drains ten times faster
        timers.advance(.seconds(8))
        #expect(answers.placed.count == 30, "\(answers.placed.count) of 30 placed after 8 s")
    }

    @Test func whileAnotherProjectSendsAtOnceANewcomerIsDeferredNotHeld() {
        let (_, _, limiter, line) = setUp()
        let answers = Answers()
        #expect(limiter.decide(project: "other") == .now(.granted))
        for n in 0..<10 { line.enter(project: "p", go: answers.go(n)) }
        #expect(answers.placed == [0])
        #expect(answers.deferred == [6, 7, 8, 9], "beyond 5 s: deferred, since another project is sending")
        #expect(line.waiting(project: "p") == 0)
    }

    @Test func aSendStillInLineAfterMaxHeldWaitIsDeferred() {
        let (_, timers, _, line) = setUp(maxHeldWait: .seconds(2))
        let answers = Answers()
        for n in 0..<12 { line.enter(project: "p", go: answers.go(n)) }
        timers.advance(.seconds(20))
        // 0 at once, 1–5 within 5 s; 6 takes its turn at the first look (1.05 s), before its 2 s.
        #expect(answers.placed == Array(0...6))
        #expect(answers.deferred == Array(7...11))
    }

    @Test func aPauseLongerThanTheShortWaitDefersTheLineAndNewcomers() {
        let (_, timers, limiter, line) = setUp()
        let answers = Answers()
        for n in 0..<10 { line.enter(project: "p", go: answers.go(n)) }
        limiter.recordQuotaExceeded(project: "p", retryAfter: nil)  // 60 s
        timers.advance(.seconds(6))
        #expect(answers.deferred == [6, 7, 8, 9])
        line.enter(project: "p", go: answers.go(10))
        #expect(answers.deferred.contains(10))
        #expect(line.waiting(project: "p") == 0)
    }

    @Test func anUrgentSendTakesTheNextTurnAheadOfTheLineAndTheLineRepaysIt() {
        let (_, timers, _, line) = setUp()  // one a second, maxWait 5 s
        let answers = Answers()
        for n in 0..<20 { line.enter(project: "p", go: answers.go(n)) }
        #expect(line.waiting(project: "p") == 14)
        line.enter(project: "p", urgent: true, go: answers.go(100))
        #expect(answers.placed == [0, 100], "the urgent send went at once, ahead of 19 paced sends")
        #expect(line.waiting(project: "p") == 14, "it took no place in the line")
        timers.advance(.milliseconds(20_500))
        #expect(answers.placed.count == 21, "the line's 19 sends and the urgent one in 20.5 s: the rate, plus one turn of debt")
        timers.advance(.seconds(2))
        #expect(answers.placed == Array(0..<20) + [100] && answers.deferred.isEmpty)
    }

    @Test func anUrgentSendWaitsOutAShortPauseAndIsDeferredByALongOne() {
        let (_, timers, limiter, line) = setUp()
        let answers = Answers()
        limiter.recordSetupFault(project: "p", reason: .tls, for: .seconds(3))
        line.enter(project: "p", urgent: true, go: answers.go(1))
        #expect(answers.placed.isEmpty && answers.deferred.isEmpty, "a 3 s pause is waited out, not deferred")
        timers.advance(.seconds(3))
        #expect(answers.placed == [1])
        limiter.recordQuotaExceeded(project: "p", retryAfter: nil)  // 60 s
        line.enter(project: "p", urgent: true, go: answers.go(2))
        #expect(answers.deferred == [2], "FCM refuses the project: an urgent send cannot go either")
    }
}
