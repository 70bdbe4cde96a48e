/// What sending one composed message gave, as the core needs to know it (the FCM adapter's
/// classification, mapped by the pipeline).
public enum DeliveryOutcome: Sendable, Equatable {
    case sent(messageName: String)
    case invalidToken(ResultError)
    case rejected(ResultError)
    /// Transient: try again later, no sooner than `retryAfter`.
    case retryable(ResultError, retryAfter: Duration?)
    /// Held back before it reached FCM (the project is paused after a 429 or a configuration
    /// failure, or over its send rate): try again after `retryAfter`. Such an attempt does not
    /// count toward the retry budget's attempts, since FCM never saw it (its age still does).
    case deferred(ResultError, retryAfter: Duration?)
    /// Our own credentials were refused even after a refresh.
    case authFailed(ResultError)
    /// An operator must fix the configuration (APNs / web push credentials, permissions, project).
    case configurationFailed(ResultError)
}
