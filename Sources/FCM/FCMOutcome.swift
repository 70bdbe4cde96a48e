/// What FCM did with one send request, classified for the pipeline.
public enum FCMOutcome: Sendable, Hashable {
    /// Accepted: FCM's message name, `projects/{p}/messages/{id}`.
    case sent(name: String)
    /// The registration token is no longer valid (UNREGISTERED / 404): prune it.
    case invalidToken(FCMFailure)
    /// The message itself is wrong (INVALID_ARGUMENT, SENDER_ID_MISMATCH, 400, 413): resending cannot help.
    case rejected(FCMFailure)
    /// Transient (QUOTA_EXCEEDED / 429, UNAVAILABLE / 503, INTERNAL / 500, timeouts, resets,
    /// GOAWAY): retry no sooner than `retryAfter` when the server gave one.
    case retryable(FCMFailure, retryAfter: Duration?)
    /// Held back before FCM saw it: the project is paused (a 429, or a fault of the setup such as
    /// an untrusted certificate or a failing token endpoint, named by the failure's code) or
    /// over its rate. Retry after `retryAfter`; the attempt does not count, since FCM never saw it.
    case deferred(FCMFailure, retryAfter: Duration?)
    /// Our own access token was refused even after a refresh, or the token endpoint refused the
    /// service account.
    case authFailed(FCMFailure)
    /// Operator-fixable configuration (THIRD_PARTY_AUTH_ERROR, PERMISSION_DENIED, project not
    /// found, TLS verification): dead-letter, fix, replay.
    case configurationFailed(FCMFailure)

    /// The failure details, nil for `.sent`.
    public var failure: FCMFailure? {
        switch self {
        case .sent: nil
        case .invalidToken(let f), .rejected(let f), .authFailed(let f), .configurationFailed(let f): f
        case .retryable(let f, _), .deferred(let f, _): f
        }
    }

    /// Short lower-case label for logs and metrics.
    public var label: String {
        switch self {
        case .sent: "sent"
        case .invalidToken: "invalid_token"
        case .rejected: "rejected"
        case .retryable: "retryable"
        case .deferred: "deferred"
        case .authFailed: "auth_failed"
        case .configurationFailed: "configuration_failed"
        }
    }
}

/// The details of an unsuccessful send: the deciding code, the HTTP status and FCM's message.
public struct FCMFailure: Sendable, Hashable, CustomStringConvertible {
    /// `details[].errorCode`, else `error.status`, else `HTTP_<status>`, else a transport code
    /// such as `TRANSPORT_TIMEOUT`.
    public let code: String
    /// The HTTP status, nil when no response arrived.
    public let httpStatus: Int?
    /// FCM's `error.message` (or a short transport description). Never contains a token.
    public let message: String

    public init(code: String, httpStatus: Int?, message: String) {
        self.code = code
        self.httpStatus = httpStatus
        self.message = message
    }

    public var description: String {
        if let httpStatus { return "\(code) (HTTP \(httpStatus)): \(message)" }
        return "\(code): \(message)"
    }
}
