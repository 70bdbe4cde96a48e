import Foundation
import Testing
@testable import EmulatorKit

/// The JWT-bearer token endpoint and bearer checks on messages:send.
@Suite(.timeLimit(.minutes(2))) struct OAuthTests {
    struct Account {
        let file: String
        let email: String
        let keyID: String
        let key: RSAKey
    }

    static func makeAccount(in dir: URL, project: String = "demo", tokenURI: String = "https://oauth2.googleapis.com/token") throws -> Account {
        let email = "svc@\(project).iam.gserviceaccount.com"
        let json = try ServiceAccountFactory.make(projectID: project, clientEmail: email, tokenURI: tokenURI)
        let file = dir.appendingPathComponent("\(project)-\(UUID().uuidString).json")
        try json.write(to: file, atomically: true, encoding: .utf8)
        let parsed = try JSONParser.parse(json)
        return Account(file: file.path, email: email, keyID: parsed["private_key_id"]?.stringValue ?? "",
                       key: try RSAKey.fromPEM(parsed["private_key"]?.stringValue ?? ""))
    }

    static func assertion(_ account: Account, key: RSAKey? = nil, audience: String = "https://oauth2.googleapis.com/token",
                          scope: String = "https://www.googleapis.com/auth/firebase.messaging",
                          issuedAgo: Int = 0, lifetime: Int = 3600) throws -> String {
        let now = Int(Date().timeIntervalSince1970) - issuedAgo
        let header = "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"\(account.keyID)\"}"
        let claims = "{\"iss\":\"\(account.email)\",\"scope\":\"\(scope)\",\"aud\":\"\(audience)\",\"iat\":\(now),\"exp\":\(now + lifetime)}"
        return try JWTAssertion.sign(headerJSON: header, claimsJSON: claims, key: key ?? account.key)
    }

    static func exchange(_ emulator: FCMEmulator, assertion: String) throws -> CurlResponse {
        try Curl.run("POST", emulator.tokenURL, http2: false, extra: [
            "-H", "content-type: application/x-www-form-urlencoded",
            "--data-urlencode", "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer",
            "--data-urlencode", "assertion=\(assertion)",
        ])
    }

    func withAuthEmulator(_ configure: (inout EmulatorConfiguration) -> Void = { _ in },
                          _ body: (FCMEmulator, Account) throws -> Void) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let account = try Self.makeAccount(in: dir)
        try withEmulator({ c in
            c.requireAuth = true
            c.serviceAccountFiles = [account.file]
            configure(&c)
        }) { emulator in try body(emulator, account) }
    }

    @Test func validAssertionGetsABearerTokenThatSends() throws {
        try withAuthEmulator { emulator, account in
            let response = try Self.exchange(emulator, assertion: Self.assertion(account))
            #expect(response.status == 200)
            #expect(response.json["token_type"] as? String == "Bearer")
            #expect(response.json["expires_in"] as? Int == 3600)
            let token = try #require(response.json["access_token"] as? String)
            #expect(try send(emulator, message: #"{"token":"t"}"#, bearer: token).status == 200)
            #expect(emulator.stats().tokensIssued == 1)
        }
    }

    @Test func ownTokenURLIsAnAcceptedAudienceAndCloudPlatformAnAcceptedScope() throws {
        try withAuthEmulator { emulator, account in
            let assertion = try Self.assertion(account, audience: emulator.tokenURL, scope: "https://www.googleapis.com/auth/cloud-platform")
            #expect(try Self.exchange(emulator, assertion: assertion).status == 200)
        }
    }

    @Test func sendWithoutOrWithUnknownBearerTokenIs401() throws {
        try withAuthEmulator { emulator, _ in
            for bearer in [nil, "ya29.made-up"] {
                let response = try send(emulator, message: #"{"token":"t"}"#, bearer: bearer)
                #expect(response.status == 401)
                #expect(response.error["status"] as? String == "UNAUTHENTICATED")
            }
            #expect(emulator.stats().count("UNAUTHENTICATED") == 2)
        }
    }

    @Test func badSignatureIsRefused() throws {
        try withAuthEmulator { emulator, account in
            let response = try Self.exchange(emulator, assertion: Self.assertion(account, key: RSAKey.generate()))
            #expect(response.status == 400)
            #expect(response.json["error"] as? String == "invalid_grant")
            #expect(response.json["error_description"] as? String == "Invalid JWT Signature.")
            #expect(emulator.stats().tokensRefused == 1)
        }
    }

    @Test func wrongAudienceIsRefused() throws {
        try withAuthEmulator { emulator, account in
            let response = try Self.exchange(emulator, assertion: Self.assertion(account, audience: "https://evil.example/token"))
            #expect(response.status == 400)
            #expect(response.json["error"] as? String == "invalid_grant")
        }
    }

    @Test func expiredAssertionIsRefused() throws {
        try withAuthEmulator { emulator, account in
            let response = try Self.exchange(emulator, assertion: Self.assertion(account, issuedAgo: 7200))
            #expect(response.status == 400)
            #expect(response.json["error"] as? String == "invalid_grant")
        }
    }

    @Test func wrongScopeAndUnknownIssuerAreRefused() throws {
        try withAuthEmulator { emulator, account in
            let scoped = try Self.exchange(emulator, assertion: Self.assertion(account, scope: "https://www.googleapis.com/auth/drive"))
            #expect(scoped.status == 400)
            #expect(scoped.json["error"] as? String == "invalid_scope")
            let dir = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let stranger = try Self.makeAccount(in: dir, project: "other")
            #expect(try Self.exchange(emulator, assertion: Self.assertion(stranger)).status == 400)
        }
    }

    @Test func noAuthAcceptsAnyWellFormedAssertionFromAnUnknownAccount() throws {
        try withAuthEmulator({ $0.requireAuth = false; $0.serviceAccountFiles = [] }) { emulator, _ in
            let dir = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let stranger = try Self.makeAccount(in: dir, project: "anyone")
            let granted = try Self.exchange(emulator, assertion: Self.assertion(stranger))
            #expect(granted.status == 200)
            #expect((granted.json["access_token"] as? String)?.hasPrefix("ya29.") == true)
            // Still a JWT check, not a free-for-all: garbage, a wrong scope or an expired assertion are refused.
            #expect(try Self.exchange(emulator, assertion: "not.a.jwt").status == 400)
            #expect(try Self.exchange(emulator, assertion: Self.assertion(stranger, scope: "https://www.googleapis.com/auth/drive")).status == 400)
            #expect(try Self.exchange(emulator, assertion: Self.assertion(stranger, issuedAgo: 7200)).status == 400)
        }
    }

    @Test func expiredAccessTokenGets401() throws {
        try withAuthEmulator({ $0.accessTokenEarlyExpiry = .milliseconds(300) }) { emulator, account in
            let token = try #require(try Self.exchange(emulator, assertion: Self.assertion(account)).json["access_token"] as? String)
            #expect(try send(emulator, message: #"{"token":"t"}"#, bearer: token).status == 200)
            let deadline = ContinuousClock.now + .seconds(5)
            var status = 200
            while status == 200, ContinuousClock.now < deadline {
                status = try send(emulator, message: #"{"token":"t"}"#, bearer: token).status
            }
            #expect(status == 401)
        }
    }

    @Test func expireAccessTokensFaultRevokesIssuedTokens() throws {
        try withAuthEmulator { emulator, account in
            let token = try #require(try Self.exchange(emulator, assertion: Self.assertion(account)).json["access_token"] as? String)
            emulator.expireAccessTokens()
            #expect(try send(emulator, message: #"{"token":"t"}"#, bearer: token).status == 401)
        }
    }
}
