import AMQP

/// The lane a job belongs to: the thread its steps run on, and whether the lane still wants its
/// work. The thread is its consumer's, whose `PollLoop` also runs the lane's HTTP/2 connections
/// and loop publisher. A step of the job that finds itself elsewhere (a turn given by the pacing
/// timer, an answer after a resend in a task, a permit freed on a publisher's thread) is handed
/// back to it, so that the job sends on the lane's connections and publishes where its delivery
/// was read (docs/decisions/0089). Once the consumer ended, no thread is the lane's any more and a
/// handed step runs at once where it was given.
///
/// The lane's give-up is a state of the lane (`hasGivenUp`), read by a job's walk before each send
/// and by its publish rounds before each round, the way a task reads its cancellation: nothing
/// carries a stop closure from call to call (docs/decisions/0092).
///
/// A step handed over must not ask `isHere` again before doing its work: after the consumer
/// ended it runs on the giver's thread, where the answer is still no.
public struct LaneThread: Sendable {
    /// The lane's three answers, built once per lane: a copy of the lane (each job's walk and
    /// publish hold one) retains one object, not three closures.
    private final class Answers: Sendable {
        let here: (@Sendable () -> Bool)?
        let handOver: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
        let gaveUp: (@Sendable () -> Bool)?

        init(here: (@Sendable () -> Bool)?, handOver: (@Sendable (@escaping @Sendable () -> Void) -> Void)?,
             gaveUp: (@Sendable () -> Bool)?) {
            self.here = here
            self.handOver = handOver
            self.gaveUp = gaveUp
        }
    }
    private let answers: Answers

    /// `isHere` tells whether the calling thread is the lane's; `hand` runs a step on it;
    /// `hasGivenUp` whether the lane gave up on its jobs.
    public init(isHere: @escaping @Sendable () -> Bool, hand: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
                hasGivenUp: (@Sendable () -> Bool)? = nil) {
        answers = Answers(here: isHere, handOver: hand, gaveUp: hasGivenUp)
    }

    /// The thread of `consumer` while it consumes (`AMQPConsumer.isCurrentThread`, `execute`);
    /// given up once the consumer ended.
    public static func of(_ consumer: AMQPConsumer) -> LaneThread {
        LaneThread(isHere: { consumer.isCurrentThread }, hand: { consumer.execute($0) }, hasGivenUp: { consumer.hasEnded })
    }

    /// A worker's lane for one consumer session: `consumer`'s thread, given up once the consumer
    /// ended (the connection is gone: no ack can land and the broker requeues the delivery) or
    /// once `tracker` abandoned what is in flight (the shutdown deadline passed). The consumer's
    /// own end is read first: it is known on the consumer's thread before the lane's task hears
    /// of the loss and abandons.
    static func of(_ consumer: AMQPConsumer, abandonedBy tracker: InFlightTracker) -> LaneThread {
        LaneThread(isHere: { consumer.isCurrentThread }, hand: { consumer.execute($0) },
                   hasGivenUp: { consumer.hasEnded || tracker.isAbandoned })
    }

    /// No thread of its own and never given up: every step runs where it is called (the one-off
    /// `push` command, a processor driven from a task, unit tests).
    public static let anywhere = LaneThread(here: nil, handOver: nil, gaveUp: nil)

    /// No thread of its own, given up once `hasGivenUp` says so (tests of a lane's give-up).
    public static func anywhere(givingUpWhen hasGivenUp: @escaping @Sendable () -> Bool) -> LaneThread {
        LaneThread(here: nil, handOver: nil, gaveUp: hasGivenUp)
    }

    private init(here: (@Sendable () -> Bool)?, handOver: (@Sendable (@escaping @Sendable () -> Void) -> Void)?,
                 gaveUp: (@Sendable () -> Bool)?) {
        answers = Answers(here: here, handOver: handOver, gaveUp: gaveUp)
    }

    /// True when a step may run here and now: on the lane's thread, or anywhere for `anywhere`.
    public var isHere: Bool { answers.here?() ?? true }

    /// True once the lane gave up on its jobs: they send nothing more, publish nothing more and
    /// leave their deliveries unacked (the broker requeues them).
    public var hasGivenUp: Bool { answers.gaveUp?() ?? false }

    /// Runs `step` on the lane's thread: now when called there, else handed to it (or, once the
    /// consumer ended, at once on this thread).
    public func run(_ step: @escaping @Sendable () -> Void) {
        guard let handOver = answers.handOver, !isHere else { return step() }
        handOver(step)
    }
}
