import OSThread

/// The thread a job belongs to: its lane's consumer thread, whose `PollLoop` also runs the
/// lane's HTTP/2 connections and loop publisher. A step of the job that finds itself elsewhere
/// (a turn given by the pacing timer, an answer after a resend in a task, a permit freed on a
/// publisher's thread) is handed back to it (`hand`), so that the job sends on the lane's
/// connections and publishes and acks where its delivery was read (docs/decisions/0089).
public struct LaneThread: Sendable {
    private let loop: ObjectIdentifier?
    private let handOver: (@Sendable (@escaping @Sendable () -> Void) -> Void)?

    /// The calling thread (a lane's consumer thread); `hand` runs a step on it from elsewhere.
    public static func current(hand: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) -> LaneThread {
        LaneThread(loop: PollLoop.current.map(ObjectIdentifier.init), handOver: hand)
    }

    /// No thread of its own: every step runs where it is called (the one-off `push` command,
    /// a processor driven from a task, unit tests).
    public static let anywhere = LaneThread(loop: nil, handOver: nil)

    /// True when a step may run here and now: on the lane's thread, or anywhere for `anywhere`.
    public var isHere: Bool {
        guard handOver != nil else { return true }
        return PollLoop.current.map(ObjectIdentifier.init) == loop
    }

    /// Runs `step` on the lane's thread: now when called there, else handed to it.
    public func run(_ step: @escaping @Sendable () -> Void) {
        guard let handOver, !isHere else { return step() }
        handOver(step)
    }
}
