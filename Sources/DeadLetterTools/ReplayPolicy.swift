import AMQP
import PushCore

/// What a replay does to one DLQ message. Pure.
///
/// A replayed job starts a fresh life in the job queue: `push-replays` goes up by one,
/// `push-attempt` is removed (the retry count restarts), and the other `push-*` failure headers
/// are dropped too — in particular `push-first-failed-at`, which the worker reads as the start of
/// the retry age limit and which would otherwise send a replayed job straight back as
/// `RETRIES_EXHAUSTED`. If it fails again, the worker writes fresh failure headers. RabbitMQ's own
/// `x-*` headers (`x-death`, `x-delivery-count`, …) describe the previous life and are dropped;
/// any other header (an upstream trace id) is kept. The body and the other properties are kept
/// byte for byte. History stays available by exporting before replaying (`dlq export`).
public struct ReplayPolicy: Sendable, Equatable {
    /// A job replayed this many times already is refused unless `force`.
    public var maxReplays: Int
    public var force: Bool

    public init(maxReplays: Int = 5, force: Bool = false) {
        self.maxReplays = maxReplays
        self.force = force
    }

    /// True when `entry` may be replayed: it keeps its whole body (even `force` does not replay
    /// the start of a body, which would only be refused again) and was not replayed too often.
    public func allows(_ entry: DeadLetterEntry) -> Bool { entry.truncatedFrom == nil && (force || entry.replays < maxReplays) }

    /// Why `entry` is refused, in words (nil when `allows` it).
    public func refusal(_ entry: DeadLetterEntry) -> String? {
        if let size = entry.truncatedFrom {
            return "its body was \(size) bytes, over --max-job-bytes, and only its first \(entry.bodyBytes) are kept: "
                + "publish it again in smaller jobs"
        }
        guard !allows(entry) else { return nil }
        return "replayed \(entry.replays) time(s) already (--max-replays \(maxReplays); --force to replay anyway)"
    }

    /// The headers of the replayed copy (`FailureHeaders.replayed`).
    public static func replayHeaders(_ headers: AMQPTable, replays: Int) -> AMQPTable {
        FailureHeaders.replayed(headers, replays: replays)
    }

    /// The properties of the replayed copy: the original ones with `replayHeaders`.
    public static func replayProperties(_ properties: MessageProperties, replays: Int) -> MessageProperties {
        var copy = properties
        copy.headers = replayHeaders(properties.headers, replays: replays)
        return copy
    }
}
