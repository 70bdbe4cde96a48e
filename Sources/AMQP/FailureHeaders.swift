import FoundationEssentials
import PushCore

/// The `push-*` failure headers (`DeadLetterHeader`, docs/contracts.md) as AMQP headers: the
/// one place that writes them (retry copies, job and events dead-letter copies), reads them back
/// (a delivery's `DeliveryHistory`, a DLQ message's `Recorded` failure) and strips them (a
/// replay). Pure.
///
/// Reading is lenient and never fails: a count may be an integer, a numeric string or a whole
/// double, a time RFC 3339 text or an AMQP timestamp; anything else counts as absent, and counts
/// are clamped (`DeliveryHistory.clamped`), since whoever published the message wrote them.
public enum FailureHeaders {
    /// The longest `push-error-message`, in characters.
    public static let maxMessageLength = 1000

    // MARK: Reading

    /// What earlier deliveries left on a job, as far as the worker can tell they are its own:
    /// - a copy that came back from one of `retryQueues` (the newest `x-death` entry names the
    ///   tier queue, reason `expired`: RabbitMQ wrote it when the copy's TTL ran out) carries
    ///   the history the worker wrote on it: attempts, first failure, replays;
    /// - a copy `dlq replay` published (`push-copy: replay`) carries its replay count only;
    /// - anything else is a new job, whatever `push-*` headers it has: upstream's forged or stale
    ///   headers, or a DLQ message moved back with a shovel or the management UI, never use up
    ///   attempts or age, nor outrank later results with a made-up replay count.
    public static func trustedHistory(_ headers: AMQPTable, retryQueues: [String]) -> DeliveryHistory {
        guard !headers.isEmpty else { return DeliveryHistory() }
        if cameBack(headers, fromOneOf: retryQueues) { return history(headers) }
        if headers[DeadLetterHeader.copy]?.stringValue == replayCopy {
            return DeliveryHistory(replays: history(headers).replays)
        }
        return DeliveryHistory()
    }

    /// The `push-copy` value of a replayed copy.
    public static let replayCopy = "replay"

    /// True when the newest `x-death` entry says the message expired in one of `queues`.
    package static func cameBack(_ headers: AMQPTable, fromOneOf queues: [String]) -> Bool {
        guard case .array(let deaths)? = headers["x-death"], case .table(let newest)? = deaths.first,
              let queue = newest["queue"]?.stringValue, newest["reason"]?.stringValue == "expired" else { return false }
        return queues.contains(queue)
    }

    /// What a job's `push-attempt`, `push-first-failed-at` and `push-replays` say, read as they
    /// are (the worker's own DLQ messages; deliveries go through `trustedHistory`).
    public static func history(_ headers: AMQPTable) -> DeliveryHistory {
        DeliveryHistory(attemptsMade: DeliveryHistory.clamped(headers[DeadLetterHeader.retryAttempt].flatMap(integer)),
                        firstFailedAt: headers[DeadLetterHeader.firstFailedAt].flatMap(timestamp),
                        replays: DeliveryHistory.clamped(headers[DeadLetterHeader.replays].flatMap(integer)),
                        possiblyDelivered: headers[DeadLetterHeader.possiblyDelivered].map(isTrue) ?? false)
    }

    /// The failure a dead-letter copy records, as written by `deadLetter` or `eventDeadLetter`.
    public struct Recorded: Sendable, Equatable {
        public var code: String
        public var message: String?
        public var attempts: Int?
        public var firstFailedAt: Timestamp?
        public var lastFailedAt: Timestamp?
    }

    /// The failure recorded in a dead letter's headers; nil without `push-error-code`.
    public static func recorded(_ headers: AMQPTable) -> Recorded? {
        guard let code = headers[DeadLetterHeader.code]?.stringValue else { return nil }
        return Recorded(code: code, message: headers[DeadLetterHeader.message]?.stringValue,
                        attempts: headers[DeadLetterHeader.attempts].flatMap(integer),
                        firstFailedAt: headers[DeadLetterHeader.firstFailedAt].flatMap(timestamp),
                        lastFailedAt: headers[DeadLetterHeader.lastFailedAt].flatMap(timestamp))
    }

    // MARK: Writing

    /// The headers of a retry copy after a delivery failed at `now`: `attempts` made so far, the
    /// first failure (this one when there was none) and the replay count (when not 0). Nothing
    /// else of the delivery travels, RabbitMQ's `x-*` headers least of all.
    public static func retry(attempts: Int, history: DeliveryHistory, now: Timestamp) -> AMQPTable {
        var headers: AMQPTable = [DeadLetterHeader.retryAttempt: .int(Int64(attempts)),
                                  DeadLetterHeader.firstFailedAt: .string((history.firstFailedAt ?? now).description)]
        if history.replays != 0 { headers[DeadLetterHeader.replays] = .int(Int64(history.replays)) }
        if history.possiblyDelivered { headers[DeadLetterHeader.possiblyDelivered] = .bool(true) }
        return headers
    }

    /// The headers of a job's dead-letter copy: why (`code`, `message` cut to
    /// `maxMessageLength`), the attempts of `history`, its first failure (else `now`), the last
    /// failure (`now`) and the replay count.
    public static func deadLetter(code: String, message: String, history: DeliveryHistory, now: Timestamp) -> AMQPTable {
        var headers: AMQPTable = [DeadLetterHeader.attempts: .int(Int64(history.attemptsMade)),
                                  DeadLetterHeader.firstFailedAt: .string((history.firstFailedAt ?? now).description),
                                  DeadLetterHeader.lastFailedAt: .string(now.description),
                                  DeadLetterHeader.replays: .int(Int64(history.replays))]
        if history.possiblyDelivered { headers[DeadLetterHeader.possiblyDelivered] = .bool(true) }
        stamp(&headers, code: code, message: message)
        return headers
    }

    /// The headers of an events DLQ copy: the delivery's own, plus why (`code`, `message` cut to
    /// `maxMessageLength`) and the queue it came from.
    public static func eventDeadLetter(_ headers: AMQPTable, code: String, message: String, sourceQueue: String) -> AMQPTable {
        var headers = headers
        stamp(&headers, code: code, message: message)
        headers[DeadLetterHeader.sourceQueue] = .string(sourceQueue)
        return headers
    }

    /// `message` as `push-error-message` carries it.
    public static func reason(_ message: String) -> String { String(message.prefix(maxMessageLength)) }

    private static func stamp(_ headers: inout AMQPTable, code: String, message: String) {
        headers[DeadLetterHeader.code] = .string(code)
        headers[DeadLetterHeader.message] = .string(reason(message))
    }

    // MARK: Stripping

    /// `headers` without the connector's `push-*` headers and RabbitMQ's `x-*` ones (the
    /// previous life of a message); any other header (an upstream trace id) is kept.
    public static func stripped(_ headers: AMQPTable) -> AMQPTable {
        headers.filter { name, _ in !name.hasPrefix("x-") && !name.hasPrefix("push-") }
    }

    /// The headers of a replayed copy: `stripped`, with `push-replays` one above `replays`.
    public static func replayed(_ headers: AMQPTable, replays: Int) -> AMQPTable {
        var result = stripped(headers)
        result[DeadLetterHeader.replays] = .int(Int64(DeliveryHistory.clamped(replays) + 1))
        result[DeadLetterHeader.copy] = .string(replayCopy)
        return result
    }

    // MARK: Values

    /// A flag from a header: `true` (boolean or text).
    package static func isTrue(_ value: AMQPFieldValue) -> Bool {
        if case .bool(let b) = value { return b }
        return value.stringValue == "true"
    }

    /// A count from a header: an integer, a numeric string or a whole double.
    package static func integer(_ value: AMQPFieldValue) -> Int? {
        switch value {
        case .int(let i): return Int(i)
        case .string(let s): return Int(s)
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: return Int(d)
        default: return nil
        }
    }

    /// A time from a header: RFC 3339 text or an AMQP timestamp.
    package static func timestamp(_ value: AMQPFieldValue) -> Timestamp? {
        switch value {
        case .timestamp(let date): return Timestamp(secondsSince1970: date.timeIntervalSince1970)
        case .string, .bytes: return value.stringValue.flatMap(Timestamp.init(rfc3339:))
        default: return nil
        }
    }
}
