import Foundation

/// Builds the OAuth2 JWT-bearer assertion (RFC 7523) a service account exchanges for an
/// access token: header `{"alg":"RS256","typ":"JWT","kid":…}`, claims `iss`, `scope`, `aud`,
/// `iat`, `exp`.
public struct JWTAssertion: Sendable {
    /// The OAuth scope FCM HTTP v1 requires.
    public static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    public let account: ServiceAccount
    public let scope: String
    /// Lifetime of the assertion; Google accepts at most one hour.
    public let lifetimeSeconds: Int64

    public init(account: ServiceAccount, scope: String = JWTAssertion.firebaseMessagingScope,
                lifetimeSeconds: Int64 = 3600) {
        self.account = account
        self.scope = scope
        self.lifetimeSeconds = lifetimeSeconds
    }

    /// The unsigned `header.claims` part.
    public func signingInput(issuedAt: Int64) -> String {
        let header: [String: Any] = ["alg": "RS256", "typ": "JWT", "kid": account.privateKeyID]
        let claims: [String: Any] = [
            "iss": account.clientEmail, "scope": scope, "aud": account.tokenURI,
            "iat": issuedAt, "exp": issuedAt + lifetimeSeconds,
        ]
        return Base64URL.encode(Self.json(header)) + "." + Base64URL.encode(Self.json(claims))
    }

    /// The complete signed assertion.
    public func signed(with signer: RSASigner, issuedAt: Int64) throws(OAuthError) -> String {
        let input = signingInput(issuedAt: issuedAt)
        let signature = try signer.sign(Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    private static func json(_ object: [String: Any]) -> [UInt8] {
        // Sorted keys keep the output deterministic; the values are plain strings and integers.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return Array(data)
    }
}
