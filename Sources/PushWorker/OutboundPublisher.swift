import AMQP
import FoundationEssentials
import OSThread
import ServiceRuntime
import Synchronization

/// A lane's publishing side: one confirming publisher connection, reopened when it dies, and
/// `publish`, which keeps a delivery's outbound messages and publishes them again
/// (with `Backoff`) until the broker confirmed every one of them.
///
/// Why: once a job's FCM sends happened, requeueing its delivery would send to every recipient
/// again. So a publish failure (basic.nack from a full queue, a channel error, a lost or timed
/// out connection, a refused reconnect) never gives the delivery back: the messages not yet
/// confirmed are retried, the ones confirmed are not published twice. Only the job's lane can
/// end the loop (`LaneThread.hasGivenUp`: the shutdown deadline passed, or the consumer
/// connection is gone), and then the delivery stays unacked.
///
/// Two kinds of connection serve it. The job whose answer came on a loop thread (a lane's
/// consumer thread) publishes through that loop's `LoopPublisher`, opened for it on first use:
/// written and confirmed on the same thread, no hand-off (docs/decisions/0086), over TLS too
/// (0090). Everything else (tasks, the loop publisher opening, blocked or retiring, every round
/// after a failed one, a TLS broker with a librabbitmq of unknown layout) goes through the
/// `ConfirmingPublisher` on its own thread.
final class OutboundPublisher: Sendable {
    private struct State {
        var generation = 0
        var connection: Task<ConfirmingPublisher, any Error>?
        var closed = false
    }

    private let settings: AMQPSettings
    private let options: ConfirmingPublisher.Options
    private let backoff: Backoff
    private let counters: WorkerCounters
    private let metrics: WorkerMetrics
    private let log: Logger
    private let state = Mutex(State())
    /// The last connected publisher and its generation, for `isBlocked` and a first round.
    private let current = Mutex<(publisher: ConfirmingPublisher, generation: Int)?>(nil)
    /// Loop publishers the broker has blocked now.
    private let loopsBlocked = Atomic<Int>(0)
    /// Set by `close`: no loop publisher is made any more.
    private let closing = Atomic<Bool>(false)
    /// False when loop publishers cannot serve the broker (`LoopPublisher.isAvailable`).
    private let usesLoopPublishers: Bool

    init(settings: AMQPSettings, confirmTimeout: Duration, backoff: Backoff, counters: WorkerCounters, metrics: WorkerMetrics, log: Logger) {
        self.settings = settings
        self.backoff = backoff
        self.counters = counters
        self.metrics = metrics
        self.log = log
        var options = ConfirmingPublisher.Options()
        options.confirmTimeout = confirmTimeout
        options.onFlowChange = { change in
            switch change {
            case .blocked(let reason):
                counters.blocked.add(1, ordering: .relaxed)
                log.warning("the broker blocked publishing (resource alarm); new deliveries wait, in-flight ones are kept",
                            ["reason": reason])
            case .unblocked:
                log.info("the broker unblocked publishing; taking deliveries again")
            }
        }
        self.options = options
        usesLoopPublishers = LoopPublisher.isAvailable(for: settings)
    }

    /// The current publisher, connecting (once, whoever asks first) when there is none or the
    /// current one died.
    @discardableResult
    func connected() async throws -> (publisher: ConfirmingPublisher, generation: Int) {
        for _ in 0..<2 {
            let (task, generation) = try state.withLock { s throws(PublisherClosed) -> (Task<ConfirmingPublisher, any Error>, Int) in
                guard !s.closed else { throw PublisherClosed() }
                if let task = s.connection { return (task, s.generation) }
                let settings = self.settings, options = self.options
                let task = Task { try await ConfirmingPublisher.connect(settings: settings, options: options) }
                s.connection = task
                s.generation += 1
                if s.generation > 1 {
                    counters.reconnects.add(1, ordering: .relaxed)
                    metrics.publisherReconnects.increment()
                }
                return (task, s.generation)
            }
            let publisher: ConfirmingPublisher
            do { publisher = try await task.value } catch {
                await drop(generation)
                throw error
            }
            if publisher.isAlive {
                current.withLock { $0 = (publisher, generation) }
                return (publisher, generation)
            }
            await drop(generation)  // died since: connect a new one
        }
        throw PublisherClosed()
    }

    /// True while the last connected publisher is alive (for `/readyz`).
    var isConnected: Bool { current.withLock { $0?.publisher.isAlive ?? false } }

    /// True while the broker keeps the current publisher, or a loop publisher, blocked.
    var isBlocked: Bool {
        loopsBlocked.load(ordering: .relaxed) > 0 || current.withLock { $0?.publisher.isBlocked ?? false }
    }

    /// Waits while the broker has publishing blocked (new work would only pile up unconfirmed),
    /// or until `lane` gives up.
    func waitWhileBlocked(for lane: LaneThread) async {
        while isBlocked && !lane.hasGivenUp { try? await Task.sleep(for: .milliseconds(100)) }
    }

    /// Publishes `messages` until the broker confirmed every one, then calls `done(true)`;
    /// `done(false)` only when `lane` gave up first (the caller then leaves its delivery
    /// unacked). What failed is published again (reconnecting if the connection died) with
    /// `backoff` between rounds; what was confirmed is not published twice.
    ///
    /// The first round takes no task: it goes to the calling loop thread's `LoopPublisher` when
    /// that takes publishes, else to the current publisher when it is alive and not blocked,
    /// and `done` is called from the thread of that publisher. A failed round, and a first round
    /// with no publisher to take it now, go on in a task (counted in `jobTasks`).
    func publish(_ messages: [OutboundMessage], for lane: LaneThread, done: @escaping @Sendable (Bool) -> Void) {
        let started = firstRound(messages) { failedRound in
            guard let failedRound else { return done(true) }
            self.inTask(done) { await self.republish(failedRound, for: lane) }
        }
        if !started { inTask(done) { await self.publish(messages, fromRound: 0, for: lane) } }
    }

    /// Runs `rounds` in a task of its own and gives its answer to `done`.
    private func inTask(_ done: @escaping @Sendable (Bool) -> Void, _ rounds: @escaping @Sendable () async -> Bool) {
        counters.jobTasks.add(1, ordering: .relaxed)
        Task { done(await rounds()) }
    }

    /// The first round of `publish`, without a task, on the calling loop thread's loop publisher
    /// or the current publisher; `done` gets nil once the broker confirmed them all, or the
    /// round that failed. False, with nothing published, when neither takes publishes now.
    private func firstRound(_ messages: [OutboundMessage], done: @escaping @Sendable (FailedRound?) -> Void) -> Bool {
        if let loop = PollLoop.current, let publisher = loopPublisher(on: loop),
           publish(messages, on: publisher, done: { failed in
               done(failed.isEmpty ? nil : FailedRound(publisher: nil, generation: 0, failed: failed, index: 0))
           }) {
            return true
        }
        guard let (publisher, generation) = current.withLock({ $0 }), publisher.isAlive, !publisher.isBlocked else { return false }
        publish(messages, on: publisher) { failed in
            done(failed.isEmpty ? nil : FailedRound(publisher: publisher, generation: generation, failed: failed, index: 0))
        }
        return true
    }

    /// Carries on after a failed first round, as the rounds of a task do after theirs: the same
    /// connection rules, backoff and log line, then the next rounds.
    private func republish(_ round: FailedRound, for lane: LaneThread) async -> Bool {
        await dropIfRefusing(round)
        await pause(round: 1, pending: round.failed.count, failure: round.failed[0].error, for: lane)
        return await publish(round.failed.map(\.message), fromRound: 1, for: lane)
    }

    /// A round of publishes the broker did not all confirm: the ones it did not, with why.
    private struct FailedRound: Sendable {
        /// The publisher of the round; nil for a loop publisher (it retires by itself).
        let publisher: ConfirmingPublisher?
        let generation: Int
        let failed: [(message: OutboundMessage, error: any Error)]
        /// 0 for the first round of a delivery's messages.
        let index: Int
    }

    /// Rounds of publishes from round `first` on, until all are confirmed or `lane` gave up.
    private func publish(_ messages: [OutboundMessage], fromRound first: Int, for lane: LaneThread) async -> Bool {
        var pending = messages
        var round = first
        while !pending.isEmpty {
            if lane.hasGivenUp { return false }
            let failure: any Error
            do {
                let (publisher, generation) = try await connected()
                let failed = await publish(pending, on: publisher)
                if failed.isEmpty { return true }
                pending = failed.map(\.message)
                failure = failed[0].error
                await dropIfRefusing(FailedRound(publisher: publisher, generation: generation, failed: failed, index: round))
            } catch {
                failure = error
            }
            round += 1
            await pause(round: round, pending: pending.count, failure: failure, for: lane)
        }
        return true
    }

    /// Drops the connection of a failed round when it died or failed in a way that kills it.
    /// A refusing quorum queue (RabbitMQ 3.10) keeps refusing on the channel that saw it refuse
    /// until the queue says "go", which it may never do once its policy is gone: a nack seen
    /// twice in a row gets a fresh connection.
    private func dropIfRefusing(_ round: FailedRound) async {
        guard let publisher = round.publisher else { return }
        if !publisher.isAlive || round.failed.contains(where: { Self.killsConnection($0.error) }) || round.index >= 1 {
            await drop(round.generation)
        }
    }

    /// Counts a failed round of `publish`, logs it (the first and every tenth) and
    /// waits out its backoff, or until `lane` gives up. A function of its own, so that the common path's
    /// frame, which every job in flight holds, stays small.
    private func pause(round: Int, pending: Int, failure: any Error, for lane: LaneThread) async {
        counters.republished.add(pending, ordering: .relaxed)
        let delay = backoff.delay(afterFailures: round)
        if round == 1 || round.isMultiple(of: 10) {
            log.warning("publish not confirmed; keeping the job's messages and publishing them again (the job is not re-sent)",
                        ["error": "\(failure)", "messages": "\(pending)", "round": "\(round)", "in": "\(delay)"])
        }
        let until = ContinuousClock.now + delay
        while ContinuousClock.now < until && !lane.hasGivenUp { try? await Task.sleep(for: min(.milliseconds(100), until - .now)) }
    }

    /// Closes the connection without waiting for confirms (called once the lane is done: what is
    /// still unconfirmed belongs to deliveries left unacked).
    func close() async {
        closing.store(true, ordering: .relaxed)
        let task = state.withLock { s -> Task<ConfirmingPublisher, any Error>? in
            s.closed = true
            defer { s.connection = nil }
            return s.connection
        }
        current.withLock { $0 = nil }
        if let publisher = try? await task?.value { await publisher.close(timeout: .zero) }
    }

    /// Publishes `messages` as one batch (one suspension for all of them); returns the ones the
    /// broker did not confirm, with why.
    private func publish(_ messages: [OutboundMessage], on publisher: ConfirmingPublisher) async
        -> [(message: OutboundMessage, error: any Error)] {
        await withCheckedContinuation { continuation in
            publish(messages, on: publisher) { continuation.resume(returning: $0) }
        }
    }

    /// `publish(_:on:)` with the unconfirmed messages given to `done` (on the publisher's thread),
    /// counted in the confirms-pending gauge meanwhile.
    private func publish(_ messages: [OutboundMessage], on publisher: ConfirmingPublisher,
                         done: @escaping @Sendable ([(message: OutboundMessage, error: any Error)]) -> Void) {
        let pending = metrics.confirmsPending
        pending.increment(by: messages.count)
        publisher.publish(batch: messages.map(\.outgoing)) { outcomes in
            pending.decrement(by: messages.count)
            done(Self.unconfirmed(messages, outcomes))
        }
    }

    /// The loop publisher of `loop` (the calling thread's), made on first use and replaced when
    /// it died; nil when loop publishers cannot serve the broker or the lane is closing.
    private func loopPublisher(on loop: PollLoop) -> LoopPublisher? {
        guard usesLoopPublishers, !closing.load(ordering: .relaxed) else { return nil }
        let key = ObjectIdentifier(self)
        let publisher = loop.source(for: key) {
            LoopPublisher(settings: settings, options: options, blockedChanged: { blocked in
                self.loopsBlocked.add(blocked ? 1 : -1, ordering: .relaxed)
            })
        }
        guard publisher.isDead else { return publisher }
        loop.detach(key)
        counters.reconnects.add(1, ordering: .relaxed)
        metrics.publisherReconnects.increment()
        return loop.source(for: key, make: publisher.successor)
    }

    /// `publish(_:on:done:)` on a loop publisher; false when it takes no publishes now.
    private func publish(_ messages: [OutboundMessage], on publisher: LoopPublisher,
                         done: @escaping @Sendable ([(message: OutboundMessage, error: any Error)]) -> Void) -> Bool {
        let pending = metrics.confirmsPending
        pending.increment(by: messages.count)
        let taken = publisher.publish(batch: messages.map(\.outgoing)) { outcomes in
            pending.decrement(by: messages.count)
            done(Self.unconfirmed(messages, outcomes))
        }
        if !taken { pending.decrement(by: messages.count) }
        return taken
    }

    /// The messages the broker did not confirm, with why.
    private static func unconfirmed(_ messages: [OutboundMessage], _ outcomes: [AMQPError?])
        -> [(message: OutboundMessage, error: any Error)] {
        var failed: [(message: OutboundMessage, error: any Error)] = []
        for (message, error) in zip(messages, outcomes) { if let error { failed.append((message, error)) } }
        return failed
    }

    /// Forgets the publisher of `generation` (if still current) and closes it.
    private func drop(_ generation: Int) async {
        let task = state.withLock { s -> Task<ConfirmingPublisher, any Error>? in
            guard s.generation == generation, let task = s.connection else { return nil }
            s.connection = nil
            return task
        }
        guard let task else { return }
        if let publisher = try? await task.value {
            current.withLock { if $0?.publisher === publisher { $0 = nil } }
            await publisher.close()  // lets the confirms of other deliveries' messages arrive first
        }
    }

    /// A nack, a return (no queue took the message) or a channel error leaves the connection
    /// usable; anything else means a new one.
    private static func killsConnection(_ error: any Error) -> Bool {
        guard let error = error as? AMQPError else { return true }
        return error.code != .nacked && error.code != .returned && error.code != .channelClosed
    }
}

/// The lane's publisher is closed or its connection died before it could be used.
struct PublisherClosed: Error, CustomStringConvertible {
    var description: String { "the lane's publisher connection is closed" }
}
