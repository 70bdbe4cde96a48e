import Foundation
import Synchronization

/// The emulated Google OAuth2 token endpoint (JWT-bearer grant) and the access tokens it issued.
final class OAuthTokenEndpoint: Sendable {
    static let googleTokenURL = "https://oauth2.googleapis.com/token"
    static let acceptedScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging",
        "https://www.googleapis.com/auth/cloud-platform",
    ]
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Clock skew tolerated on `iat` / `exp`.
    static let skewSeconds = 60.0

    private let accounts: Mutex<[ServiceAccountKey]>
    private let lifetime: Duration
    private let earlyExpiry: Duration?
    /// Access token → monotonic deadline (ns).
    private let issued = Mutex([String: UInt64]())
    private let ownTokenURL = Mutex<String?>(nil)
    /// `--no-auth`: any well-formed assertion gets a token, whoever signed it (local development
    /// with any service account). The JWT's shape, claims and lifetime are still checked.
    private let acceptAnySigner: Bool

    init(accounts: [ServiceAccountKey], lifetime: Duration, earlyExpiry: Duration?, acceptAnySigner: Bool = false) {
        self.accounts = Mutex(accounts)
        self.lifetime = lifetime
        self.earlyExpiry = earlyExpiry
        self.acceptAnySigner = acceptAnySigner
    }

    func setOwnTokenURL(_ url: String) { ownTokenURL.withLock { $0 = url } }

    func trust(_ account: ServiceAccountKey) { accounts.withLock { $0.append(account) } }

    /// An OAuth error answer (`{"error": …, "error_description": …}`), as Google's endpoint sends.
    struct Refusal: Error, Equatable {
        let status: Int
        let error: String
        let description: String
        var body: String { "{\"error\":\(JSONValue.quoted(error)),\"error_description\":\(JSONValue.quoted(description))}" }
        static func invalidGrant(_ d: String) -> Refusal { Refusal(status: 400, error: "invalid_grant", description: d) }
        static func invalidRequest(_ d: String) -> Refusal { Refusal(status: 400, error: "invalid_request", description: d) }
        static func invalidScope(_ d: String) -> Refusal { Refusal(status: 400, error: "invalid_scope", description: d) }
    }

    /// Handles a form-encoded token request; answers the JSON of a new access token.
    func exchange(formBody: [UInt8], now: Date = Date()) throws(Refusal) -> String {
        let form = FormDecoding.decode(String(decoding: formBody, as: UTF8.self))
        guard form["grant_type"] == OAuthTokenEndpoint.grantType else {
            throw .invalidRequest("Invalid grant_type: expected \(OAuthTokenEndpoint.grantType)")
        }
        guard let assertion = form["assertion"] else { throw .invalidRequest("Missing required parameter: assertion") }
        try verify(assertion: assertion, now: now)
        return issue()
    }

    /// A new access token, as the JSON of a token answer (`access_token`, `expires_in`, `token_type`).
    func issue() -> String {
        let token = "ya29.emu-" + (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let validity = earlyExpiry.map { min($0, lifetime) } ?? lifetime
        let deadline = MonotonicClock.nowNanos() &+ UInt64(max(0, validity.nanoseconds))
        issued.withLock { tokens in
            if tokens.count > 10_000 {
                let now = MonotonicClock.nowNanos()
                tokens = tokens.filter { $0.value > now }
            }
            tokens[token] = deadline
        }
        let seconds = lifetime.components.seconds
        return "{\"access_token\":\"\(token)\",\"expires_in\":\(seconds),\"token_type\":\"Bearer\"}"
    }

    /// True when `authorization` (an HTTP header value) carries a live access token.
    func isAuthorized(_ authorization: String?) -> Bool {
        guard let authorization, authorization.count > 7, authorization.lowercased().hasPrefix("bearer ") else { return false }
        let token = String(authorization.dropFirst(7)).trimmingSpaces
        let now = MonotonicClock.nowNanos()
        return issued.withLock { $0[String(token)].map { $0 > now } ?? false }
    }

    /// Fault: every access token issued so far stops working now.
    func expireAll() { issued.withLock { $0.removeAll() } }

    private func verify(assertion: String, now: Date) throws(Refusal) {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = try? JSONParser.parse(headerBytes), let claims = try? JSONParser.parse(claimBytes) else {
            throw .invalidGrant("Invalid JWT: malformed assertion.")
        }
        guard header["alg"]?.stringValue == "RS256" else { throw .invalidGrant("Invalid JWT: alg must be RS256.") }
        guard let issuer = claims["iss"]?.stringValue, !issuer.isEmpty else { throw .invalidGrant("Invalid JWT: missing iss.") }
        if acceptAnySigner {
            guard !signature.isEmpty else { throw .invalidGrant("Invalid JWT Signature.") }
        } else {
            let kid = header["kid"]?.stringValue
            let candidates = accounts.withLock { $0 }.filter { $0.clientEmail == issuer && (kid == nil || $0.privateKeyID == nil || $0.privateKeyID == kid) }
            guard !candidates.isEmpty else { throw .invalidGrant("Invalid JWT: unknown issuer or key id.") }
            let signingInput = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
            guard candidates.contains(where: { $0.key.verifyRS256(signature: signature, data: signingInput) }) else {
                throw .invalidGrant("Invalid JWT Signature.")
            }
        }
        let own = ownTokenURL.withLock { $0 }
        guard let audience = claims["aud"]?.stringValue,
              audience == OAuthTokenEndpoint.googleTokenURL || audience == own else {
            throw .invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values and use a clock with skew to account for clock differences between systems. (aud does not name this token endpoint)")
        }
        guard let iat = claims["iat"].flatMap(Self.number), let exp = claims["exp"].flatMap(Self.number) else {
            throw .invalidGrant("Invalid JWT: missing iat or exp.")
        }
        let t = now.timeIntervalSince1970
        guard exp > iat, exp - iat <= 3600 + Self.skewSeconds, iat <= t + Self.skewSeconds, exp > t - Self.skewSeconds else {
            throw .invalidGrant("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values and use a clock with skew to account for clock differences between systems.")
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init)
        guard scopes.contains(where: OAuthTokenEndpoint.acceptedScopes.contains) else {
            throw .invalidScope("Invalid OAuth scope or ID token audience provided.")
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        if case .number(let n) = value { return Double(n) }
        return nil
    }
}

/// `application/x-www-form-urlencoded` decoding.
enum FormDecoding {
    static func decode(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = unescape(kv[0])
            out[key] = kv.count > 1 ? unescape(kv[1]) : ""
        }
        return out
    }

    static func unescape(_ s: Substring) -> String {
        let plus = s.replacingOccurrences(of: "+", with: " ")
        return plus.removingPercentEncoding ?? plus
    }
}
