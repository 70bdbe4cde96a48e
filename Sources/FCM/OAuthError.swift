/// Why an access token could not be obtained. Never carries a key, an assertion or a token.
public struct OAuthError: Error, Sendable, Hashable, CustomStringConvertible {
    /// How the failure should be treated by a sender.
    public enum Disposition: Sendable, Hashable {
        /// The credentials are wrong (bad key, revoked account, refused grant): resending cannot help.
        case credentials
        /// The token endpoint or the network failed: try again later.
        case transient
        /// The token endpoint's TLS certificate was not trusted: fix the CA configuration.
        case configuration
    }

    private enum Code: Sendable, Hashable {
        case invalidPrivateKey(String)
        case signingFailed
        case refused(httpStatus: Int, error: String)
        case endpointFailed(httpStatus: Int, retryAfter: Duration?)
        case malformedResponse(httpStatus: Int)
        case transport(String)
        case untrustedEndpoint(String)
    }

    private let code: Code

    public static func invalidPrivateKey(_ reason: String) -> Self { .init(code: .invalidPrivateKey(reason)) }
    public static let signingFailed = Self(code: .signingFailed)
    /// The token endpoint refused the grant (4xx), with its OAuth `error` code.
    public static func refused(httpStatus: Int, error: String) -> Self { .init(code: .refused(httpStatus: httpStatus, error: error)) }
    /// The token endpoint answered 5xx (or another unexpected status).
    public static func endpointFailed(httpStatus: Int, retryAfter: Duration? = nil) -> Self {
        .init(code: .endpointFailed(httpStatus: httpStatus, retryAfter: retryAfter))
    }
    public static func malformedResponse(httpStatus: Int) -> Self { .init(code: .malformedResponse(httpStatus: httpStatus)) }
    public static func transport(_ reason: String) -> Self { .init(code: .transport(reason)) }
    /// TLS verification of the token endpoint failed.
    public static func untrustedEndpoint(_ reason: String) -> Self { .init(code: .untrustedEndpoint(reason)) }

    public var disposition: Disposition {
        switch code {
        case .invalidPrivateKey, .signingFailed, .refused: .credentials
        case .endpointFailed, .malformedResponse, .transport: .transient
        case .untrustedEndpoint: .configuration
        }
    }

    /// HTTP status of the token endpoint's answer, when there was one.
    public var httpStatus: Int? {
        switch code {
        case .refused(let status, _), .endpointFailed(let status, _), .malformedResponse(let status): status
        default: nil
        }
    }

    /// The token endpoint's `Retry-After` (a 429 or 503), when it gave one.
    public var retryAfter: Duration? {
        if case .endpointFailed(_, let after) = code { return after }
        return nil
    }

    /// RFC 6749's error codes (§5.2), the only `error` values used as labels: a token endpoint's
    /// other words would make the label set unbounded.
    static let oauthErrorCodes: Set<String> = ["invalid_grant", "invalid_client", "invalid_request", "invalid_scope",
                                                 "unauthorized_client", "unsupported_grant_type", "access_denied"]

    /// A short label of the failure for metrics and logs: the OAuth `error` code of a refusal
    /// (`invalid_grant`), else `http_<status>`, `malformed`, `unreachable`, `tls` or `key`.
    public var cause: String {
        switch code {
        case .invalidPrivateKey, .signingFailed: "key"
        case .refused(let status, let error): Self.oauthErrorCodes.contains(error) ? error : "http_\(status)"
        case .endpointFailed(let status, _): "http_\(status)"
        case .malformedResponse: "malformed"
        case .transport: "unreachable"
        case .untrustedEndpoint: "tls"
        }
    }

    public var description: String {
        switch code {
        case .invalidPrivateKey(let reason): "service account private key: \(reason)"
        case .signingFailed: "signing the OAuth assertion failed"
        case .refused(let status, let error): "token endpoint refused the service account (HTTP \(status), \(error))"
        case .endpointFailed(let status, _): "token endpoint failed (HTTP \(status))"
        case .malformedResponse(let status): "token endpoint answered an unreadable token response (HTTP \(status))"
        case .transport(let reason): "token endpoint unreachable: \(reason)"
        case .untrustedEndpoint(let reason): "token endpoint TLS verification failed: \(reason)"
        }
    }
}
