import Foundation
import OSThread
import PushCore
import Synchronization
import Testing
@testable import PushWorker

/// A job's walk through its targets: the pure state (`TargetWalkState`) step by step, then the
/// walk with in-memory senders that answer at once, later or out of order (pure logic: no network).
@Suite(.timeLimit(.minutes(1))) struct TargetWalkTests {
    // MARK: the state alone

    static func invalid(_ id: String) -> CompositionOutcome { .invalid(recipientIndex: 0, mnMessageID: id, issues: []) }

    @Test func aWalkAsksEachTurnInOrderAndFinishesOnceTheLastAnswerCame() {
        var walk = TargetWalkState(count: 2)
        var steps: [TargetWalkState.Step] = []
        let entered = walk.enter()
        #expect(entered)
        steps.append(walk.nextStep())
        let takenByRunner = walk.turnGiven(0, placed: true)
        steps.append(walk.nextStep())
        walk.composed(Self.invalid("a"), started: false)
        steps.append(walk.nextStep())
        steps.append(walk.nextStep())  // no turn yet: the runner leaves
        let runByGiver = walk.turnGiven(1, placed: false)
        steps.append(walk.nextStep())
        walk.composed(Self.invalid("b"), started: true)
        steps.append(walk.nextStep())  // every target composed, one send unanswered
        #expect(steps == [.askTurn(0), .send(0, placed: true), .askTurn(1), .wait, .send(1, placed: false), .wait])
        #expect(!takenByRunner && runByGiver, "a turn given while the runner works is left to it; otherwise the giver runs")
        let last = walk.answered(.sent(messageName: "m"), at: 1)
        let again = walk.answered(.sent(messageName: "m"), at: 1)
        #expect(last && !again, "the last answer finishes the walk, once")
        #expect(walk.sends.composed.count == 2 && walk.sends.delivered.count == 1)
    }

    @Test func anAnswerWhileTheRunnerIsAtWorkIsLeftForTheRunnerToFinish() {
        var walk = TargetWalkState(count: 1)
        _ = walk.enter()
        let ask = walk.nextStep()
        _ = walk.turnGiven(0, placed: false)
        let send = walk.nextStep()
        walk.composed(Self.invalid("a"), started: true)
        let answeredFinishes = walk.answered(.sent(messageName: "m"), at: 0)
        let end = walk.nextStep()
        #expect(ask == .askTurn(0) && send == .send(0, placed: false))
        #expect(!answeredFinishes && end == .finished, "answered while the runner runs: the runner finishes")
    }

    @Test func aWalkThatStoppedSendingComposesTheRestWithoutAskingTurns() {
        var walk = TargetWalkState(count: 3)
        var steps: [TargetWalkState.Step] = []
        _ = walk.enter()
        steps.append(walk.nextStep())
        _ = walk.turnGiven(0, placed: false)
        steps.append(walk.nextStep())
        walk.stopSending()
        for id in ["a", "b", "c"] {
            walk.composed(Self.invalid(id), started: false)
            steps.append(walk.nextStep())
        }
        #expect(steps == [.askTurn(0), .send(0, placed: false), .composeOnly(1), .composeOnly(2), .finished])
    }

    // MARK: the walk with a sender

    static let app = AppConfiguration(appID: "shop-android", projectID: "shop-prod", credentialsFile: "/dev/null")

    static func ready(recipients: Int) throws -> ReadyJob {
        let list = (0..<recipients).map { #"{"token":"dev-\#($0)"}"# }.joined(separator: ",")
        let job = try SendJob.decode(Data(#"{"job_id":"walk","app_id":"shop-android","notification":{"title":"T"},"recipients":[\#(list)]}"#.utf8))
        return ReadyJob(job: job, app: app, prepared: try MessageComposer().prepare(job, app: app))
    }

    /// Answers each send at once, on the caller's thread, and notes how deep the stack was
    /// when each turn was asked.
    final class AnsweringAtOnce: PushSender {
        let depths = Mutex<[Int]>([])
        func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void) {
            completion(.sent(messageName: "m"))
        }
        func pace(app: AppConfiguration, urgent: Bool, then go: @escaping @Sendable (Bool) -> Void) {
            let depth = Thread.callStackReturnAddresses.count
            depths.withLock { $0.append(depth) }
            go(true)
        }
    }

    /// Keeps every send's completion until the test answers it.
    final class AnsweringLater: PushSender {
        let held = Mutex<[(index: Int, completion: @Sendable (DeliveryOutcome) -> Void)]>([])
        func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void) {
            held.withLock { $0.append((String(decoding: body, as: UTF8.self).contains("dev-0") ? 0 : $0.count, completion)) }
        }
        func answer(at position: Int) {
            let completion = held.withLock { $0[position].completion }
            completion(.sent(messageName: "m-\(position)"))
        }
        var count: Int { held.withLock { $0.count } }
    }

    /// What `sent` was given, and how many times.
    final class Outcome: Sendable {
        let calls = Mutex<[TargetSends?]>([])
        func record(_ sends: TargetSends?) { calls.withLock { $0.append(sends) } }
        var count: Int { calls.withLock { $0.count } }
        var last: TargetSends?? { calls.withLock { $0.last } }
    }

    /// A number the test and the walk's closures share.
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
        var current: Int { value.load(ordering: .relaxed) }
        func add() -> Int { value.add(1, ordering: .relaxed).newValue }
    }

    func context(_ ready: ReadyJob, _ sender: any PushSender, window: PermitPool? = nil, lane: LaneThread = .anywhere,
                 cancelled: @escaping @Sendable () -> Bool = { false }) -> TargetWalk.Context {
        TargetWalk.Context(ready: ready, sender: sender, window: window, unsentGauge: nil, urgent: false, lane: lane,
                           cancelled: cancelled)
    }

    /// A sender that gives every turn and answer at once makes the walk a loop: the stack is as
    /// deep at the thousandth target as at the first (a recursion would grow it per target).
    @Test func aThousandTargetsAnsweredAtOnceWalkInALoopNotARecursion() throws {
        let sender = AnsweringAtOnce()
        let outcome = Outcome()
        TargetWalk.start(context(try Self.ready(recipients: 1000), sender, window: PermitPool(capacity: 4))) { outcome.record($0) }
        #expect(outcome.count == 1)
        let sends = try #require(outcome.last ?? nil)
        #expect(sends.composed.count == 1000 && sends.delivered.count == 1000)
        let depths = sender.depths.withLock { $0 }
        #expect(depths.count == 1000 && Set(depths).count == 1, "stack depths at each turn: \(Set(depths).sorted())")
    }

    /// Answers that come later and out of order: the job is handed its sends once, after the
    /// last one, with every answer at its target's index; the window bounds what is in flight.
    @Test func answersOutOfOrderFinishTheJobOnceAfterTheLast() throws {
        let sender = AnsweringLater()
        let outcome = Outcome()
        let window = PermitPool(capacity: 2)
        TargetWalk.start(context(try Self.ready(recipients: 3), sender, window: window)) { outcome.record($0) }
        #expect(sender.count == 2 && window.available == 0, "two sends in flight, the third waits for a permit")
        sender.answer(at: 1)
        #expect(sender.count == 3, "the answer's permit let the third target go")
        sender.answer(at: 2)
        #expect(outcome.count == 0, "the first send is still unanswered")
        sender.answer(at: 0)
        #expect(outcome.count == 1 && window.available == 2)
        let sends = try #require(outcome.last ?? nil)
        #expect(sends.delivered.keys.sorted() == [0, 1, 2] && sends.composed.count == 3)
    }

    /// A cancel that arrives while a job's targets go out: the targets after it are composed,
    /// not sent, and give their permits back.
    @Test func aJobCancelledMidwaySendsNoMoreTargets() throws {
        let sender = AnsweringLater()
        let outcome = Outcome()
        let cancels = Counter()
        let window = PermitPool(capacity: 2)
        TargetWalk.start(context(try Self.ready(recipients: 5), sender, window: window,
                                 cancelled: { cancels.current > 0 })) { outcome.record($0) }
        #expect(sender.count == 2)
        _ = cancels.add()
        sender.answer(at: 0)
        sender.answer(at: 1)
        #expect(sender.count == 2, "nothing sent after the cancel")
        let sends = try #require(outcome.last ?? nil)
        #expect(outcome.count == 1 && sends.composed.count == 5 && sends.delivered.keys.sorted() == [0, 1])
        #expect(window.available == 2)
    }

    /// The lane gave up before the first send: nothing is sent, the permit comes back, and the
    /// job is told nothing was sent (nil), once.
    @Test func aLaneThatGaveUpBeforeTheFirstSendSendsNothing() throws {
        let sender = AnsweringLater()
        let outcome = Outcome()
        let asked = Counter()
        let window = PermitPool(capacity: 2)
        // false when the walk starts, true once the first target has its turn.
        let lane = LaneThread.anywhere(givingUpWhen: { asked.add() > 1 })
        TargetWalk.start(context(try Self.ready(recipients: 3), sender, window: window, lane: lane)) { outcome.record($0) }
        #expect(sender.count == 0 && window.available == 2)
        #expect(outcome.count == 1 && outcome.last! == nil)
    }

    /// A lane whose consumer ended: no thread is its own any more (`isHere` is false everywhere)
    /// and a handed step runs at once where it was given. Every turn and answer is handed over
    /// once and the walk finishes; a handed step that asked `isHere` again would hand itself
    /// over forever (a stack overflow, found in review).
    @Test func aWalkWhoseLaneEndedFinishesWhereItsTurnsAndAnswersCome() throws {
        let sender = AnsweringLater()
        let outcome = Outcome()
        let handed = Counter()
        let ended = LaneThread(isHere: { false }, hand: { step in _ = handed.add(); step() })
        let window = PermitPool(capacity: 2)
        TargetWalk.start(context(try Self.ready(recipients: 3), sender, window: window, lane: ended)) { outcome.record($0) }
        #expect(sender.count == 2 && handed.current == 2, "two turns, each handed over once")
        sender.answer(at: 0)
        sender.answer(at: 1)
        #expect(sender.count == 3)
        sender.answer(at: 2)
        let sends = try #require(outcome.last ?? nil)
        #expect(outcome.count == 1 && sends.delivered.count == 3)
        #expect(handed.current == 6, "three turns and three answers, each handed over once: \(handed.current)")
        #expect(window.available == 2)
    }
}
