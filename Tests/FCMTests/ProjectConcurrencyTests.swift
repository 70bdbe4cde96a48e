import Synchronization
import Testing
@testable import FCM

/// `ProjectConcurrency`: a project's sends in flight are bounded by how fast it answers; a slow
/// project's sends over its limit are deferred at once, a prompt one's wait for its next answer.
@Suite(.timeLimit(.minutes(1))) struct ProjectConcurrencyTests {
    typealias Timers = PacingLineTests.ManualTimers

    /// What each send was told, by its number.
    final class Decisions: Sendable {
        private let told = Mutex<[Int: ProjectConcurrency.Decision]>([:])
        func decided(_ n: Int) -> @Sendable (ProjectConcurrency.Decision) -> Void { { d in self.told.withLock { $0[n] = d } } }
        var going: [Int] { told.withLock { $0.filter { $0.value == .go }.keys.sorted() } }
        var deferred: [Int] { told.withLock { $0.filter { $0.value != .go }.keys.sorted() } }
        subscript(n: Int) -> ProjectConcurrency.Decision? { told.withLock { $0[n] } }
        var count: Int { told.withLock { $0.count } }
    }

    func setUp(initial: Int = 4, floor: Int = 2, maximum: Int = 100) -> (ManualClock, Timers, ProjectConcurrency) {
        let clock = ManualClock()
        let timers = Timers(clock)
        var tuning = ProjectLoad.Tuning()
        (tuning.initial, tuning.floor, tuning.maximum) = (initial, floor, maximum)
        let gate = ProjectConcurrency(tuning: tuning, now: { clock.now() }, schedule: { timers.schedule($0, $1) })
        return (clock, timers, gate)
    }

    @Test func aProjectThatNeverAnswersKeepsItsInitialLimitAndTheRestIsDeferredOnceItIsSlow() {
        let (_, timers, gate) = setUp()
        let decisions = Decisions()
        for n in 0..<10 { gate.enter(project: "hung", decided: decisions.decided(n)) }
        #expect(decisions.going == [0, 1, 2, 3], "the initial limit goes at once")
        #expect(decisions.count == 4, "the rest wait while the project may still answer promptly")
        timers.advance(.milliseconds(600))
        #expect(decisions.deferred == Array(4..<10), "no answer in 0.5 s: the waiting sends are deferred")
        #expect(decisions[4] == .deferred(.seconds(5)), "at least the shortest deferral")
        gate.enter(project: "hung", decided: decisions.decided(10))
        #expect(decisions[10] != nil && decisions[10] != .go, "a newcomer of a slow project is deferred at once")
        #expect(gate.slowProjectCount == 1)
        #expect(gate.state(project: "hung").inFlight == 4)
    }

    @Test func anotherProjectIsNotHeldByTheSlowOne() {
        let (_, timers, gate) = setUp()
        let decisions = Decisions()
        for n in 0..<10 { gate.enter(project: "hung", decided: decisions.decided(n)) }
        timers.advance(.seconds(1))
        for n in 100..<150 {
            gate.enter(project: "fine", decided: decisions.decided(n))
            if decisions[n] == .go { gate.leave(project: "fine", after: .milliseconds(20)) }
        }
        #expect(decisions.going.filter { $0 >= 100 } == Array(100..<150))
    }

    @Test func promptAnswersRaiseTheLimitAndSlowOnesHalveItDownToTheFloor() {
        let (clock, _, gate) = setUp(initial: 4, floor: 2, maximum: 10)
        for _ in 0..<20 {
            gate.enter(project: "p") { _ in }
            clock.advance(.milliseconds(10))
            gate.leave(project: "p", after: .milliseconds(10))
        }
        #expect(gate.state(project: "p").limit == 10, "grown by one a prompt answer, up to the maximum")
        for _ in 0..<5 {
            gate.enter(project: "p") { _ in }
            clock.advance(.seconds(2))
            gate.leave(project: "p", after: .seconds(2))
        }
        #expect(gate.state(project: "p").limit == 2, "halved by each slow answer, down to the floor")
    }

    @Test func aPromptProjectAtItsLimitLetsTheNextSendInWithItsNextAnswerInOrder() {
        let (clock, _, gate) = setUp()
        let decisions = Decisions()
        for n in 0..<6 { gate.enter(project: "p", decided: decisions.decided(n)) }
        #expect(decisions.going == [0, 1, 2, 3])
        clock.advance(.milliseconds(50))
        gate.leave(project: "p", after: .milliseconds(50))
        #expect(decisions.going == [0, 1, 2, 3, 4, 5], "one answer frees one place and raises the limit by one")
        #expect(decisions.deferred.isEmpty)
    }

    @Test func aProjectAnsweringInTwentySecondsIsSlowAfterItsAnswersAndItsDeferralsFollowItsAnswerTime() {
        let (clock, _, gate) = setUp()
        for _ in 0..<4 { gate.enter(project: "p") { _ in } }
        clock.advance(.seconds(20))
        for _ in 0..<4 { gate.leave(project: "p", after: .seconds(20)) }
        let decisions = Decisions()
        for n in 0..<4 { gate.enter(project: "p", decided: decisions.decided(n)) }
        #expect(decisions.going == [0, 1], "the limit fell to the floor")
        #expect(decisions[2] == .deferred(.seconds(20)), "slow by its answers: deferred at once, for its answer time")
    }

    @Test func aProjectIdleForLongStartsAgainFromItsInitialLimit() {
        let (clock, _, gate) = setUp(initial: 4, floor: 2, maximum: 50)
        for _ in 0..<30 {
            gate.enter(project: "p") { _ in }
            gate.leave(project: "p", after: .milliseconds(10))
        }
        #expect(gate.state(project: "p").limit == 34)
        clock.advance(.seconds(60))
        gate.enter(project: "p") { _ in }
        #expect(gate.state(project: "p").limit == 4)
    }

    @Test func theWatcherHearsOnceWhenAProjectTurnsSlowAndOnceWhenItRecovers() {
        let (clock, timers, gate) = setUp()
        let heard = Mutex<[Bool]>([])
        gate.onChange { _, slow, _ in heard.withLock { $0.append(slow) } }
        for _ in 0..<12 { gate.enter(project: "p") { _ in } }
        timers.advance(.seconds(1))
        gate.enter(project: "p") { _ in }
        #expect(heard.withLock { $0 } == [true])
        clock.advance(.milliseconds(10))
        for _ in 0..<4 { gate.leave(project: "p", after: .milliseconds(10)) }
        #expect(heard.withLock { $0 } == [true, false], "prompt answers bring the project back")
        #expect(gate.slowProjectCount == 0)
    }
}
