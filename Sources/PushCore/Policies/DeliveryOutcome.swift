/// What sending one composed message gave, as the core needs to know it (the FCM adapter's
/// classification, mapped by the pipeline).
public enum DeliveryOutcome: Sendable, Equatable {
    case sent(messageName: String)
    case invalidToken(ResultError)
    case rejected(ResultError)
    /// Transient: try again later, no sooner than `retryAfter`. `overQuota`: FCM said the
    /// project is over its quota (429), so the whole job waits for the quota, not for a tier.
    case retryable(ResultError, retryAfter: Duration?, overQuota: Bool = false)
    /// Held back before it reached FCM (the project is paused after a 429 or a configuration
    /// failure, or over its send rate): try again after `retryAfter`. Such an attempt does not
    /// count toward the retry budget's attempts, since FCM never saw it (its age still does).
    case deferred(ResultError, retryAfter: Duration?)
    /// Our own credentials were refused even after a refresh.
    case authFailed(ResultError)
    /// An operator must fix the configuration (APNs / web push credentials, permissions, project).
    case configurationFailed(ResultError, ConfigurationFault = .other)
}

/// Which configuration an operator must fix: it names the dead-letter code.
public enum ConfigurationFault: Sendable, Equatable {
    /// The APNs certificate or web push credentials (`THIRD_PARTY_AUTH_ERROR`).
    case thirdPartyAuth
    /// The service account's permission on the project (`PERMISSION_DENIED`).
    case permissionDenied
    /// Anything else: the project, the URL, the credentials file (`CONFIGURATION_ERROR`).
    case other

    /// The code a job dead-lettered for this fault carries.
    public var deadLetterCode: DeadLetterCode {
        switch self {
        case .thirdPartyAuth: .thirdPartyAuthError
        case .permissionDenied: .permissionDenied
        case .other: .configuration
        }
    }
}
