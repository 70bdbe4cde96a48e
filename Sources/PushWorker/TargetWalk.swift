import PushCore
import OSThread
import Synchronization

/// Where a job's walk through its targets stands: a plain value, advanced by `TargetWalk` and
/// by the answers of the sends it started. No I/O, no callbacks: every decision of the walk that
/// does not need the sender is here.
///
/// The walk takes the targets in order. Each one, while the job is still sending, asks for its
/// turn (its project's pace, then a send-window permit); once given, it is composed and sent.
/// Once the job stops sending (the lane gave up, the job was cancelled) the remaining targets
/// are composed and not sent. Only one step runs at a time (`running`): a turn given while a
/// step runs is left for that step's runner to take, so a sender that answers at once makes a
/// loop, never a recursion as deep as the job is long.
struct TargetWalkState: Sendable {
    /// What the walk's runner does next (`next()`).
    enum Step: Equatable, Sendable {
        /// Ask for target `index`'s turn; `turnGiven` answers.
        case askTurn(Int)
        /// Target `index` has its turn (`placed`: the pace took it): compose it and send it.
        case send(Int, placed: Bool)
        /// Compose target `index` without sending it: the job stopped sending.
        case composeOnly(Int)
        /// Nothing to do until a turn is given or a send answers; the runner leaves.
        case wait
        /// Every target is composed and every send answered: hand `TargetSends` to the job.
        case finished
    }

    let count: Int
    /// The next target the walk has not reached.
    private(set) var next = 0
    /// False once the job stopped sending: the rest is composed only.
    private(set) var sending = true
    /// A turn was asked and not yet given.
    private(set) var asking = false
    /// The turn given and not yet taken by a runner.
    private var given: (index: Int, placed: Bool)?
    /// A runner is in `TargetWalk.run` (one at a time).
    private(set) var running = false
    /// Sends started and not answered.
    private(set) var outstanding = 0
    /// `finished` was handed out (once).
    private(set) var concluded = false
    /// Every target's composition outcome so far, in order (without its request body).
    private(set) var composed: [CompositionOutcome] = []
    /// What each send gave, by target index.
    private(set) var delivered: [Int: DeliveryOutcome] = [:]

    init(count: Int) {
        self.count = count
        composed.reserveCapacity(count)
    }

    /// Claims the runner's place; false when a runner is at work already (it will see what changed).
    mutating func enter() -> Bool {
        if running { return false }
        running = true
        return true
    }

    /// The runner's next step; `wait` and `finished` give its place up.
    mutating func nextStep() -> Step {
        if let turn = given {
            given = nil
            return .send(turn.index, placed: turn.placed)
        }
        if asking {
            running = false
            return .wait
        }
        if next < count {
            let index = next
            next += 1
            if sending {
                asking = true
                return .askTurn(index)
            }
            return .composeOnly(index)
        }
        running = false
        return conclude() ? .finished : .wait
    }

    /// The turn asked by `askTurn(index)` was given. True when the caller must run the walk (no
    /// runner is at work); false when the runner at work takes it.
    mutating func turnGiven(_ index: Int, placed: Bool) -> Bool {
        precondition(asking && index == next - 1, "a turn given for a target the walk did not ask")
        asking = false
        given = (index, placed)
        return enter()
    }

    /// The job stops sending: this target and the rest are composed only.
    mutating func stopSending() { sending = false }

    /// A target composed; `started` when its send was started (it must `answered` later).
    mutating func composed(_ outcome: CompositionOutcome, started: Bool) {
        composed.append(outcome)
        if started { outstanding += 1 }
    }

    /// A send's answer. True when it was the last one the finished walk waited for: hand the
    /// sends to the job (once).
    mutating func answered(_ outcome: DeliveryOutcome, at index: Int) -> Bool {
        delivered[index] = outcome
        outstanding -= 1
        return !running && conclude()
    }

    /// Every target's composition outcome and what the sends gave (`finished`).
    var sends: TargetSends { (composed, delivered) }

    /// True once, when every target is composed and every send answered.
    private mutating func conclude() -> Bool {
        guard !concluded, outstanding == 0, next == count, !asking, given == nil else { return false }
        concluded = true
        return true
    }
}

/// One job's walk through its targets (`TargetWalkState`), with the sender, the send window and
/// the job's `sent` callback: the one way a job is sent, whatever its number of targets. Every
/// step runs on the job's thread (`Context.lane`; on a lane, its consumer thread): a turn or an
/// answer given on another thread is handed back to it first. It holds no task: a job waiting
/// for a turn or an answer is this object and its state.
final class TargetWalk: Sendable {
    /// What the walk needs of the processor, fixed for the job.
    struct Context: Sendable {
        let ready: ReadyJob
        let sender: any PushSender
        let window: PermitPool?
        let unsentGauge: HighWaterGauge?
        let urgent: Bool
        /// The job's lane: turns and answers given elsewhere are handed back to its thread; once
        /// it gave up (`hasGivenUp`), nothing more is sent.
        let lane: LaneThread
        /// True when the fleet cancelled the job since it was read.
        let cancelled: @Sendable () -> Bool
    }

    private let context: Context
    private let sent: @Sendable (TargetSends?) -> Void
    private let state: Mutex<TargetWalkState>

    /// Starts sending `context.ready`'s targets (called on the job's thread); `sent` gets what they
    /// gave once the last send answered (on the job's thread while its lane consumes; where the
    /// last answer came once the lane's consumer ended), or nil when the lane gave up before the
    /// first send (nothing was sent).
    static func start(_ context: Context, sent: @escaping @Sendable (TargetSends?) -> Void) {
        if context.lane.hasGivenUp { return sent(nil) }
        let walk = TargetWalk(context, sent: sent)
        if walk.state.withLock({ $0.enter() }) { walk.run() }
    }

    private init(_ context: Context, sent: @escaping @Sendable (TargetSends?) -> Void) {
        self.context = context
        self.sent = sent
        state = Mutex(TargetWalkState(count: context.ready.prepared.targetCount))
    }

    /// Takes steps until the walk must wait for a turn or an answer, or is finished.
    private func run() {
        while true {
            switch state.withLock({ $0.nextStep() }) {
            case .askTurn(let index):
                askTurn(index)
            case .send(let index, let placed):
                if !send(index, placed: placed) { return }
            case .composeOnly(let index):
                composeOnly(index)
            case .wait:
                return
            case .finished:
                return sent(state.withLock { $0.sends })
            }
        }
    }

    /// A turn at the project's rate, then a send-window permit; `turnGiven` once both are taken
    /// (at once, or from the thread that gives them).
    private func askTurn(_ index: Int) {
        let window = context.window
        context.sender.pace(app: context.ready.app, urgent: context.urgent) { placed in
            guard let window else { return self.turnGiven(index, placed: placed) }
            window.acquire(1) { _ in self.turnGiven(index, placed: placed) }
        }
    }

    /// A turn given, on the job's thread: handed over first when given elsewhere (the handed step
    /// does not ask again, see `LaneThread`).
    private func turnGiven(_ index: Int, placed: Bool) {
        guard context.lane.isHere else { return context.lane.run { self.takeTurn(index, placed: placed) } }
        takeTurn(index, placed: placed)
    }

    private func takeTurn(_ index: Int, placed: Bool) {
        if state.withLock({ $0.turnGiven(index, placed: placed) }) { run() }
    }

    /// Composes target `index` (its permit taken) and starts its send, unless the job stops
    /// sending now: the lane gave up, or the fleet cancelled it (this target and the rest end
    /// `cancelled` in its plan). A target that cannot be composed gives its permit back at once.
    /// False when the walk ended here: the lane gave up before the first send (`sent(nil)`).
    private func send(_ index: Int, placed: Bool) -> Bool {
        let window = context.window
        let laneGaveUp = context.lane.hasGivenUp
        if laneGaveUp || context.cancelled() {
            window?.release(1)
            if index == 0 && laneGaveUp {
                sent(nil)
                return false
            }
            state.withLock { $0.stopSending() }
            composeOnly(index)
            return true
        }
        let outcome = context.ready.prepared.compose(index)
        guard case .message(let message) = outcome else {
            window?.release(1)
            state.withLock { $0.composed(outcome, started: false) }
            return true
        }
        let settled = outcome.settled
        state.withLock { $0.composed(settled, started: true) }
        let gauge = context.unsentGauge
        gauge?.increment()
        context.sender.start(message.body, app: context.ready.app, placed: placed) { delivered in
            gauge?.decrement()
            window?.release(1)
            self.answered(delivered, at: index)
        }
        return true
    }

    /// Composes target `index` without sending it (the job stopped sending).
    private func composeOnly(_ index: Int) {
        let outcome = context.ready.prepared.compose(index).settled
        state.withLock { $0.composed(outcome, started: false) }
    }

    /// A send's answer, on the job's thread: handed over first when it came elsewhere.
    private func answered(_ outcome: DeliveryOutcome, at index: Int) {
        guard context.lane.isHere else { return context.lane.run { self.record(outcome, at: index) } }
        record(outcome, at: index)
    }

    private func record(_ outcome: DeliveryOutcome, at index: Int) {
        if state.withLock({ $0.answered(outcome, at: index) }) { sent(state.withLock { $0.sends }) }
    }
}
