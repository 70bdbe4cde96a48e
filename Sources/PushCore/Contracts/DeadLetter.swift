/// Why a job was dead-lettered: the `push-error-code` header (contract: docs/contracts.md).
public enum DeadLetterCode: String, Sendable, CaseIterable {
    /// Not JSON, or not a valid job (the body is kept byte for byte).
    case invalidJob = "INVALID_JOB"
    /// `app_id` not in the App ID configuration: add it, then replay.
    case unknownApp = "UNKNOWN_APP"
    /// Our own OAuth token was refused even after a refresh.
    case authFailed = "AUTH_FAILED"
    /// FCM could not authenticate to APNs / web push with the project's credentials.
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"
    /// The service account may not send for this project.
    case permissionDenied = "PERMISSION_DENIED"
    /// The Firebase project does not exist (or the credentials file is unusable).
    case configuration = "CONFIGURATION_ERROR"
    /// Transient failures until the attempts or the age limit ran out.
    case retriesExhausted = "RETRIES_EXHAUSTED"
}

/// Why the events consumer copied a delivery to the events DLQ (`push-error-code`).
public enum EventsDeadLetterCode: String, Sendable, CaseIterable {
    /// A message of the events queue that is not a valid event.
    case invalidEvent = "INVALID_EVENT"
    /// A message of the results stream that is not a valid result.
    case invalidResult = "INVALID_RESULT"
    /// A record the store refused for itself, after `EventsConsumer`'s transaction retries.
    case storeFailed = "STORE_FAILED"
}

/// The headers the connector sets on a dead-lettered job. Custom names avoid the `x-` prefix,
/// which RabbitMQ owns (`x-death` is never used to count retries).
public enum DeadLetterHeader {
    public static let code = "push-error-code"
    public static let message = "push-error-message"
    public static let attempts = "push-attempts"
    public static let firstFailedAt = "push-first-failed-at"
    public static let lastFailedAt = "push-last-failed-at"
    public static let replays = "push-replays"
    /// `true` on a retry copy or dead letter of a job an attempt of which timed out after its
    /// request was sent whole: FCM may have delivered it.
    public static let possiblyDelivered = "push-possibly-delivered"
    /// Attempts made so far on a job travelling through the retry tiers.
    public static let retryAttempt = "push-attempt"
    /// Set to `replay` on the copies `dlq replay` publishes to the job queue: the only copies not
    /// from a retry tier whose `push-replays` the worker reads (docs/contracts.md, "Headers").
    public static let copy = "push-copy"
    /// The queue an events DLQ message was consumed from.
    public static let sourceQueue = "push-source-queue"
    /// `high` on the dead letter of a high-priority job (its field, or taken from the urgent
    /// queue): `dlq replay` publishes it with the routing key `job.high`.
    public static let priority = "push-priority"
    /// The size of a job body over `--max-job-bytes` of which the dead letter keeps only the
    /// first 64 KiB (the worker never holds such a body whole): `dlq replay` leaves it.
    public static let truncatedFrom = "push-body-truncated-from"
}
