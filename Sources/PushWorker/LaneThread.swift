import AMQP

/// The thread a job belongs to: its lane's consumer thread, whose `PollLoop` also runs the
/// lane's HTTP/2 connections and loop publisher. A step of the job that finds itself elsewhere
/// (a turn given by the pacing timer, an answer after a resend in a task, a permit freed on a
/// publisher's thread) is handed back to it, so that the job sends on the lane's connections
/// and publishes where its delivery was read (docs/decisions/0089). Once the consumer ended, no
/// thread is the lane's any more and a handed step runs at once where it was given.
///
/// A step handed over must not ask `isHere` again before doing its work: after the consumer
/// ended it runs on the giver's thread, where the answer is still no.
public struct LaneThread: Sendable {
    private let here: (@Sendable () -> Bool)?
    private let handOver: (@Sendable (@escaping @Sendable () -> Void) -> Void)?

    /// `isHere` tells whether the calling thread is the lane's; `hand` runs a step on it.
    public init(isHere: @escaping @Sendable () -> Bool, hand: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        here = isHere
        handOver = hand
    }

    /// The thread of `consumer` while it consumes (`AMQPConsumer.isCurrentThread`, `execute`).
    public static func of(_ consumer: AMQPConsumer) -> LaneThread {
        LaneThread(isHere: { consumer.isCurrentThread }, hand: { consumer.execute($0) })
    }

    /// No thread of its own: every step runs where it is called (the one-off `push` command,
    /// a processor driven from a task, unit tests).
    public static let anywhere = LaneThread(here: nil, handOver: nil)

    private init(here: (@Sendable () -> Bool)?, handOver: (@Sendable (@escaping @Sendable () -> Void) -> Void)?) {
        self.here = here
        self.handOver = handOver
    }

    /// True when a step may run here and now: on the lane's thread, or anywhere for `anywhere`.
    public var isHere: Bool { here?() ?? true }

    /// Runs `step` on the lane's thread: now when called there, else handed to it (or, once the
    /// consumer ended, at once on this thread).
    public func run(_ step: @escaping @Sendable () -> Void) {
        guard let handOver, !isHere else { return step() }
        handOver(step)
    }
}
