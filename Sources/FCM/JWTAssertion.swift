import FoundationEssentials
import PushCore

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
        let header: JSONValue = .object(["alg": .string("RS256"), "typ": .string("JWT"), "kid": .string(account.privateKeyID)])
        let claims: JSONValue = .object([
            "iss": .string(account.clientEmail), "scope": .string(scope), "aud": .string(account.tokenURI),
            "iat": .int(issuedAt), "exp": .int(issuedAt + lifetimeSeconds),
        ])
        // The writer sorts keys, so the output is deterministic.
        return Base64URL.encode(header.encodedBytes()) + "." + Base64URL.encode(claims.encodedBytes())
    }

    /// The complete signed assertion.
    public func signed(with signer: RSASigner, issuedAt: Int64) throws(OAuthError) -> String {
        let input = signingInput(issuedAt: issuedAt)
        let signature = try signer.sign(Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }
}
