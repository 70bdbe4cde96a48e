/// What earlier deliveries of a job left behind: the attempts made, when it first failed
/// transiently and how many times an operator replayed it from the DLQ. Read once per delivery
/// from its `push-*` headers (the connector's `FailureHeaders`) and passed down the pipeline;
/// nothing else reads those headers again.
public struct DeliveryHistory: Sendable, Equatable {
    /// The largest count taken from a header: whoever published the message wrote it, so a count
    /// is clamped to 0…`maxCount` rather than trusted.
    public static let maxCount = 1_000_000

    /// Attempts made before this delivery (`push-attempt`; 0 for a new job).
    public var attemptsMade: Int
    /// When the job first failed transiently (`push-first-failed-at`); nil if it never did.
    public var firstFailedAt: Timestamp?
    /// Times the job was replayed from the DLQ (`push-replays`).
    public var replays: Int
    /// An earlier attempt timed out after its request was sent whole (`push-possibly-delivered`):
    /// FCM may have delivered it, so a result saying it was not must say so.
    public var possiblyDelivered: Bool

    public init(attemptsMade: Int = 0, firstFailedAt: Timestamp? = nil, replays: Int = 0, possiblyDelivered: Bool = false) {
        self.attemptsMade = attemptsMade
        self.firstFailedAt = firstFailedAt
        self.replays = replays
        self.possiblyDelivered = possiblyDelivered
    }

    /// This delivery's attempt, 1 for the first.
    public var attempt: Int { attemptsMade + 1 }

    /// The history once this delivery's attempt counts too: what a dead letter records after the
    /// job was tried.
    public var afterThisAttempt: DeliveryHistory {
        DeliveryHistory(attemptsMade: attempt, firstFailedAt: firstFailedAt, replays: replays, possiblyDelivered: possiblyDelivered)
    }

    /// `count` clamped to 0…`maxCount` (nil: 0).
    public static func clamped(_ count: Int?) -> Int {
        min(max(count ?? 0, 0), maxCount)
    }
}
