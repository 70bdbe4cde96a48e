import AMQP
import FoundationEssentials
import PushCore

/// The parsed, read-only view of one message in the job DLQ: who it was for, why it failed and
/// when. Pure (no I/O). It never fails: a body that is not JSON (an `INVALID_JOB` kept byte for
/// byte) simply has no job id or App ID, and a message RabbitMQ dead-lettered by itself (no
/// `push-*` headers, an `x-death` entry instead) gets a code derived from the `x-death` reason,
/// such as `DELIVERY_LIMIT` for the job queue's crash-loop guard.
public struct DeadLetterEntry: Sendable, Equatable {
    /// Code shown for a message without `push-error-code` whose `x-death` reason is `delivery_limit`.
    public static let deliveryLimitCode = "DELIVERY_LIMIT"
    /// Code shown for a message with neither `push-error-code` nor `x-death`.
    public static let unknownCode = "UNKNOWN"
    /// The codes a message RabbitMQ dead-lettered by itself shows: its `x-death` reasons
    /// (`rejected`, `expired`, `maxlen`, `delivery_limit`) upper-cased, and `UNKNOWN`.
    public static let brokerCodes = [deliveryLimitCode, "REJECTED", "EXPIRED", "MAXLEN", unknownCode]

    public var jobID: String?
    public var appID: String?
    public var campaign: String?
    /// `push-error-code`, else derived from `x-death` (`DELIVERY_LIMIT`, `REJECTED`, `EXPIRED`, …).
    public var code: String
    public var message: String?
    public var attempts: Int?
    /// `push-replays` (0 when absent).
    public var replays: Int
    public var firstFailedAt: Timestamp?
    public var lastFailedAt: Timestamp?
    /// Number of targets: recipients, or 1 for a topic / condition job; nil when the body is no job.
    public var targets: Int?
    public var bodyBytes: Int
    /// The job body's size when the dead letter keeps only its start (`push-body-truncated-from`):
    /// such a job cannot be replayed, only looked at.
    public var truncatedFrom: Int?

    public init(jobID: String? = nil, appID: String? = nil, campaign: String? = nil, code: String,
                message: String? = nil, attempts: Int? = nil, replays: Int = 0, firstFailedAt: Timestamp? = nil,
                lastFailedAt: Timestamp? = nil, targets: Int? = nil, bodyBytes: Int = 0) {
        self.jobID = jobID
        self.appID = appID
        self.campaign = campaign
        self.code = code
        self.message = message
        self.attempts = attempts
        self.replays = replays
        self.firstFailedAt = firstFailedAt
        self.lastFailedAt = lastFailedAt
        self.targets = targets
        self.bodyBytes = bodyBytes
    }

    /// Reads a DLQ message: the job fields from the body (when it is a JSON object), the failure
    /// from the `push-*` headers or, failing those, from RabbitMQ's `x-death`.
    public init(body: Data, headers: AMQPTable) {
        self.init(code: Self.unknownCode, bodyBytes: body.count)
        if case .object(let job)? = try? JSONValue.parse(body) {
            jobID = job["job_id"]?.stringValue
            appID = job["app_id"]?.stringValue
            campaign = job["campaign"]?.stringValue
            if let recipients = job["recipients"]?.arrayValue { targets = recipients.count }
            else if job["topic"] != nil || job["condition"] != nil { targets = 1 }
        }
        replays = FailureHeaders.history(headers).replays
        truncatedFrom = headers[DeadLetterHeader.truncatedFrom].flatMap(FailureHeaders.integer)
        if let failure = FailureHeaders.recorded(headers) {
            code = failure.code
            message = failure.message
            attempts = failure.attempts
            firstFailedAt = failure.firstFailedAt
            lastFailedAt = failure.lastFailedAt
        } else if case .array(let deaths)? = headers["x-death"], case .table(let death)? = deaths.first {
            let reason = death["reason"]?.stringValue ?? "unknown"
            code = reason == "delivery_limit" ? Self.deliveryLimitCode : reason.uppercased()
            let queue = death["queue"]?.stringValue ?? "?"
            message = "dead-lettered by RabbitMQ from queue \(queue) (x-death reason \(reason))"
            lastFailedAt = death["time"].flatMap(FailureHeaders.timestamp)
            firstFailedAt = deaths.compactMap { value -> Timestamp? in
                guard case .table(let d) = value else { return nil }
                return d["time"].flatMap(FailureHeaders.timestamp)
            }.min() ?? lastFailedAt
            attempts = headers["x-delivery-count"].flatMap(FailureHeaders.integer)
        }
    }

    /// Seconds since the last failure at `now` (nil when the message carries no time).
    public func age(at now: Timestamp) -> Double? {
        lastFailedAt.map { now.secondsSince1970 - $0.secondsSince1970 }
    }
}
