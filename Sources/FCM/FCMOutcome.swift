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
    /// What the failure is for the decisions taken on it (pause the project for its quota, which
    /// dead-letter code): read from `code` and `httpStatus` here, once, so that no later step
    /// compares code strings.
    public let kind: Kind

    /// The kinds of failure something downstream decides on; `other` for the rest.
    public enum Kind: Sendable, Hashable {
        /// HTTP 429 or `QUOTA_EXCEEDED`: the project is over its FCM quota.
        case quotaExceeded
        /// `THIRD_PARTY_AUTH_ERROR` (or its former name `APNS_AUTH_ERROR`): the APNs certificate
        /// or web push credentials are refused.
        case thirdPartyAuth
        /// `PERMISSION_DENIED`: the service account may not send for this project.
        case permissionDenied
        /// Something that is not FCM answered (`UNEXPECTED_RESPONSE`): the URL or a proxy is wrong.
        case unexpectedResponse
        case other

        init(code: String, httpStatus: Int?) {
            switch code {
            case _ where httpStatus == 429, "QUOTA_EXCEEDED": self = .quotaExceeded
            case "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR": self = .thirdPartyAuth
            case "PERMISSION_DENIED": self = .permissionDenied
            case FCMResponseDecoder.unexpectedResponseCode: self = .unexpectedResponse
            default: self = .other
            }
        }
    }

    public init(code: String, httpStatus: Int?, message: String) {
        self.code = code
        self.httpStatus = httpStatus
        self.message = message
        kind = Kind(code: code, httpStatus: httpStatus)
    }

    public var description: String {
        if let httpStatus { return "\(code) (HTTP \(httpStatus)): \(message)" }
        return "\(code): \(message)"
    }
}
