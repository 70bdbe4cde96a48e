/// The fraction of each project's FCM quota one worker process may use when several processes
/// consume the same job queue (pure: the caller brings the counts).
///
/// The broker counts AMQP consumers on the job queue (`queue.declare-ok`'s `consumer_count`);
/// every lane of every process is one consumer. A process with `ownLanes` lanes takes
/// `ownLanes / (others + ownLanes)`, where `others` = the broker's count minus the lanes of this
/// process consuming when it counted. Its own lanes count in full even before they consume, so
/// a starting process never takes more than its final share.
///
/// An unknown or zero count (no answer, broker restarting, every lane reconnecting) keeps the
/// last share: a blip never hands a process the whole quota. A process that never counted uses
/// the whole quota (`share == 1`), the single-process behaviour.
public struct QuotaShare: Sendable, Equatable {
    /// Consumers this process runs on the job queue (its configured lanes, at least 1).
    public let ownLanes: Int
    /// The fraction in force, in (0, 1].
    public private(set) var share: Double = 1
    /// Consumers of the whole fleet the share was computed with (others + own lanes); nil
    /// before the first usable count.
    public private(set) var fleetConsumers: Int?

    public init(ownLanes: Int) { self.ownLanes = max(1, ownLanes) }

    /// Applies one count: `reported` is the broker's consumer count of the job queue (nil when
    /// it could not be read) and `ownConsuming` this process's lanes consuming at that moment.
    /// Returns the share in force afterwards.
    @discardableResult
    public mutating func update(reported: Int?, ownConsuming: Int) -> Double {
        guard let reported, reported > 0 else { return share }
        let others = max(0, reported - min(max(0, ownConsuming), reported))
        let fleet = others + ownLanes
        fleetConsumers = fleet
        share = Double(ownLanes) / Double(fleet)
        return share
    }

    /// `perMinute` scaled by `share`, at least 1 (a project is never stopped by the share alone).
    public static func limit(_ perMinute: Int, share: Double) -> Int {
        guard share < 1 else { return perMinute }
        return max(1, Int((Double(perMinute) * share).rounded(.down)))
    }
}
