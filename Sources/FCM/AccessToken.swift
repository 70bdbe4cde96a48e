import FoundationEssentials
import PushCore

/// An OAuth2 access token and when it stops being valid. `description` redacts the value.
public struct AccessToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The bearer token. Never log it.
    public let value: String
    /// Wall-clock expiry as announced by `expires_in`.
    public let expiresAt: Date
    /// The header lines of an FCM send made with this token, built once per token (the transport
    /// reuses its header list while they stay the same). They hold the token: never log them.
    let sendHeaders: [String]

    public init(value: String, expiresAt: Date) {
        self.value = value
        self.expiresAt = expiresAt
        sendHeaders = ["Authorization: Bearer " + value, "Content-Type: application/json"]
    }

    /// Parses a token endpoint answer `{access_token, expires_in, token_type}` received at `now`.
    /// `minimumLifetime` floors `expires_in` (see `defaultMinimumLifetime`).
    static func parse(httpStatus: Int, body: [UInt8], now: Date, retryAfter: String? = nil,
                      minimumLifetime: TimeInterval = defaultMinimumLifetime) throws(OAuthError) -> AccessToken {
        let json = try? JSONValue.parse(body)
        guard (200..<300).contains(httpStatus) else {
            if (400..<500).contains(httpStatus), httpStatus != 408, httpStatus != 429 {
                let error = json?["error"]?.stringValue ?? "HTTP \(httpStatus)"
                throw .refused(httpStatus: httpStatus, error: String(error.prefix(100)))
            }
            throw .endpointFailed(httpStatus: httpStatus, retryAfter: retryAfter.flatMap { RetryAfter.parse($0) })
        }
        guard let json, let value = json["access_token"]?.stringValue, !value.isEmpty else {
            throw .malformedResponse(httpStatus: httpStatus)
        }
        if let type = json["token_type"]?.stringValue, type.lowercased() != "bearer" {
            throw .malformedResponse(httpStatus: httpStatus)
        }
        let announced = json["expires_in"].flatMap(\.intValue).map(Double.init) ?? 3600
        // A token endpoint announcing 0 or 1 s must not make every send fetch a token.
        let lifetime = min(max(announced, minimumLifetime), maximumLifetime)
        return AccessToken(value: value, expiresAt: now.addingTimeInterval(lifetime))
    }

    /// Shortest lifetime a token is kept for, whatever `expires_in` says (Google issues 3600 s):
    /// a token endpoint answering `expires_in: 0` must not make every send fetch a token. If such a
    /// token is refused early, the 401 → refresh → 401 path ends in an auth failure that pauses
    /// the project, so fetches stay bounded either way.
    public static let defaultMinimumLifetime: TimeInterval = 60
    /// Longest lifetime believed (Google's tokens live at most 12 h).
    public static let maximumLifetime: TimeInterval = 43_200

    public var description: String { "AccessToken(<redacted>, expires: \(expiresAt))" }
    public var debugDescription: String { description }
}
