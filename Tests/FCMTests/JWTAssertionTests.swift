import Foundation
import Testing
@testable import FCM

@Suite(.timeLimit(.minutes(1))) struct JWTAssertionTests {
    let account = try! ServiceAccount.parse(TestKeys.serviceAccountJSON(privateKey: TestKeys.shared), file: "sa.json")

    private func decodeJSON(_ part: Substring) throws -> [String: Any] {
        let bytes = try #require(Base64URL.decode(String(part)))
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func headerAndClaimsFollowGooglesJWTBearerProfile() throws {
        let jwt = try JWTAssertion(account: account).signed(with: RSASigner(pem: TestKeys.shared), issuedAt: 1_700_000_000)
        let parts = jwt.split(separator: ".")
        #expect(parts.count == 3)
        let header = try decodeJSON(parts[0])
        #expect(header["alg"] as? String == "RS256")
        #expect(header["typ"] as? String == "JWT")
        #expect(header["kid"] as? String == "kid-123")
        let claims = try decodeJSON(parts[1])
        #expect(claims["iss"] as? String == account.clientEmail)
        #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claims["aud"] as? String == account.tokenURI)
        #expect((claims["iat"] as? NSNumber)?.int64Value == 1_700_000_000)
        #expect((claims["exp"] as? NSNumber)?.int64Value == 1_700_003_600)
    }

    @Test func signatureVerifiesWithThePublicKey() throws {
        let jwt = try JWTAssertion(account: account).signed(with: RSASigner(pem: TestKeys.shared), issuedAt: 1_700_000_000)
        let lastDot = try #require(jwt.lastIndex(of: "."))
        let input = Array(jwt[..<lastDot].utf8)
        let signature = try #require(Base64URL.decode(String(jwt[jwt.index(after: lastDot)...])))
        #expect(signature.count == 256)
        #expect(TestKeys.verify(signature: signature, message: input, privateKeyPEM: TestKeys.shared))
        var tampered = input
        tampered[tampered.count - 1] ^= 1
        #expect(!TestKeys.verify(signature: signature, message: tampered, privateKeyPEM: TestKeys.shared))
    }

    @Test func signatureDoesNotVerifyWithAnotherKey() throws {
        let other = TestKeys.makePrivateKeyPEM(bits: 1024)
        let signature = try RSASigner(pem: TestKeys.shared).sign(Array("abc".utf8))
        #expect(!TestKeys.verify(signature: signature, message: Array("abc".utf8), privateKeyPEM: other))
    }

    @Test func unreadableKeyIsRefused() {
        #expect(throws: OAuthError.invalidPrivateKey("the PEM private key cannot be read")) {
            try RSASigner(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
    }

    @Test func base64URLHasNoPaddingNorUnsafeCharacters() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }
}
