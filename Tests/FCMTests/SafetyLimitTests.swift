import EmulatorKit
import Foundation
import Synchronization
import Testing
@testable import FCM

/// An in-memory transport answering the token endpoint and FCM from a script, counting requests.
final class ScriptedTransport: HTTPTransport {
    private let state = Mutex<(token: Int, fcm: Int)>((0, 0))
    let tokenAnswer: @Sendable () -> HTTPResponse
    let fcmAnswer: @Sendable () -> HTTPResponse

    init(tokenAnswer: @escaping @Sendable () -> HTTPResponse = { ScriptedTransport.token(expiresIn: 3600) },
         fcmAnswer: @escaping @Sendable () -> HTTPResponse) {
        self.tokenAnswer = tokenAnswer
        self.fcmAnswer = fcmAnswer
    }

    static func token(expiresIn: Int) -> HTTPResponse {
        HTTPResponse(status: 200, body: Array(#"{"access_token":"ya29.t","expires_in":\#(expiresIn),"token_type":"Bearer"}"#.utf8))
    }

    var tokenRequests: Int { state.withLock { $0.token } }
    var fcmRequests: Int { state.withLock { $0.fcm } }

    /// Answers from the script, later, on another thread (as a real transport would).
    func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        Task { completion(.success(answer(request))) }
    }

    private func answer(_ request: HTTPRequest) -> HTTPResponse {
        if request.url.hasSuffix("/token") {
            state.withLock { $0.token += 1 }
            return tokenAnswer()
        }
        state.withLock { $0.fcm += 1 }
        return fcmAnswer()
    }
}

@Suite struct ConfigurationPauseTests {
    static let account = ServiceAccount(projectID: "shop-prod", privateKeyID: "k", privateKey: TestKeys.shared,
                                        clientEmail: "svc@shop-prod.iam.gserviceaccount.com", tokenURI: "https://oauth2.example/token")

    func send(_ client: FCMClient) async -> FCMOutcome {
        await client.send(projectID: "shop-prod", messageBody: Array(#"{"message":{"token":"t"}}"#.utf8), credentials: .serviceAccount(Self.account))
    }

    /// A token endpoint's 429 or 503 Retry-After is honoured: the project pauses at least that
    /// long, the send waits (deferred, not an attempt), and no further token request is made.
    @Test func aTokenEndpointsRetryAfterSetsThePause() async {
        let transport = ScriptedTransport(tokenAnswer: { HTTPResponse(status: 429, body: Array("{}".utf8), retryAfter: "120") },
                                          fcmAnswer: { HTTPResponse(status: 200, body: Array(#"{"name":"n"}"#.utf8)) })
        let client = FCMClient(configuration: FCMClient.Configuration(), transport: transport)
        let first = await send(client)
        #expect(first.label == "deferred")
        #expect(first.failure?.code == "OAUTH_UNAVAILABLE" && first.failure?.httpStatus == 429)
        #expect(client.rateLimiter.pauseRemaining(project: "shop-prod") > .seconds(115))
        #expect(client.rateLimiter.pausedProjects()[.token] == 1)
        let second = await send(client)
        #expect(second.failure?.code == "PROJECT_PAUSED")
        #expect(transport.tokenRequests == 1 && transport.fcmRequests == 0)
    }

    @Test func aForeign404PausesTheProjectInsteadOfJudgingTokens() async {
        let transport = ScriptedTransport(fcmAnswer: { HTTPResponse(status: 404, body: Array("<html>Not Found</html>".utf8)) })
        let client = FCMClient(configuration: FCMClient.Configuration(), transport: transport)
        let first = await send(client)
        #expect(first.label == "configuration_failed")
        #expect(first.failure?.code == "UNEXPECTED_RESPONSE")
        #expect(first.failure?.message.contains("<html>Not Found</html>") == true)
        // The next send does not reach the broken endpoint: the project is paused.
        let second = await send(client)
        #expect(second.label == "deferred")
        #expect(second.failure?.code == "PROJECT_PAUSED")
        #expect(transport.fcmRequests == 1)
        #expect(client.rateLimiter.pauseRemaining(project: "shop-prod") > .zero)
        #expect(client.rateLimiter.pauseRemaining(project: "other-project") == .zero)
    }

    @Test func ourTokenRefusedAfterARefreshPausesTheProject() async {
        let unauthenticated = #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#
        let transport = ScriptedTransport(fcmAnswer: { HTTPResponse(status: 401, body: Array(unauthenticated.utf8)) })
        let client = FCMClient(configuration: FCMClient.Configuration(), transport: transport)
        #expect(await send(client).label == "auth_failed")
        #expect(transport.fcmRequests == 2)  // one refresh and resend
        #expect(await send(client).failure?.code == "PROJECT_PAUSED")
        #expect(transport.fcmRequests == 2)
    }

    @Test func anFcmVerdictDoesNotPauseTheProject() async {
        let unregistered = #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
        let transport = ScriptedTransport(fcmAnswer: { HTTPResponse(status: 404, body: Array(unregistered.utf8)) })
        let client = FCMClient(configuration: FCMClient.Configuration(), transport: transport)
        #expect(await send(client).label == "invalid_token")
        #expect(await send(client).label == "invalid_token")
        #expect(transport.fcmRequests == 2)
    }
}

@Suite struct TokenLifetimeTests {
    final class Clock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func now() -> Date { time.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
    }

    @Test(arguments: [0, 1, -5])
    func aTinyExpiresInIsRaisedToTheMinimumLifetime(expiresIn: Int) throws {
        let now = Date(timeIntervalSince1970: 1_000)
        let token = try AccessToken.parse(httpStatus: 200, body: ScriptedTransport.token(expiresIn: expiresIn).body, now: now)
        #expect(token.expiresAt == Date(timeIntervalSince1970: 1_060))
    }

    @Test func aOneSecondTokenDoesNotCauseARefreshStorm() async throws {
        let transport = ScriptedTransport(tokenAnswer: { ScriptedTransport.token(expiresIn: 1) },
                                          fcmAnswer: { HTTPResponse(status: 200, body: []) })
        let clock = Clock()
        let source = AccessTokenSource(transport: transport, refreshMargin: .seconds(300), now: { clock.now() })
        for _ in 0..<100 { _ = try await source.token(for: .serviceAccount(ConfigurationPauseTests.account)) }
        #expect(transport.tokenRequests == 1)
        // Reused for the first half of the (raised) 60 s lifetime, refreshed after.
        clock.advance(29)
        _ = try await source.token(for: .serviceAccount(ConfigurationPauseTests.account))
        #expect(transport.tokenRequests == 1)
        clock.advance(2)
        _ = try await source.token(for: .serviceAccount(ConfigurationPauseTests.account))
        #expect(transport.tokenRequests == 2)
    }

    @Test func anHourLongTokenIsStillRefreshedFiveMinutesBeforeItExpires() async throws {
        let transport = ScriptedTransport(fcmAnswer: { HTTPResponse(status: 200, body: []) })
        let clock = Clock()
        let source = AccessTokenSource(transport: transport, refreshMargin: .seconds(300), now: { clock.now() })
        _ = try await source.token(for: .serviceAccount(ConfigurationPauseTests.account))
        clock.advance(3299)
        _ = try await source.token(for: .serviceAccount(ConfigurationPauseTests.account))
        #expect(transport.tokenRequests == 1)
        clock.advance(2)
        _ = try await source.token(for: .serviceAccount(ConfigurationPauseTests.account))
        #expect(transport.tokenRequests == 2)
    }
}

@Suite(.serialized) struct ResponseSizeLimitTests {
    /// The emulator's HTML 404 page is a few hundred bytes: over a 64-byte limit, under the default.
    @Test func aBodyOverTheLimitFailsAsATransportErrorAndIsNotBuffered() async throws {
        var emulatorConfiguration = EmulatorConfiguration()
        emulatorConfiguration.port = 0
        let emulator = try FCMEmulator(configuration: emulatorConfiguration)
        try emulator.start()
        defer { emulator.stop() }
        let request = HTTPRequest(url: emulator.baseURL + "/typo", headers: [], body: Array("{}".utf8))

        var small = CurlTransportConfiguration()
        small.maxResponseBytes = 64
        let limited = CurlTransport(configuration: small)
        defer { limited.shutdown() }
        switch await limited.send(request) {
        case .success(let response): Issue.record("accepted a \(response.body.count)-byte body over a 64-byte limit")
        case .failure(let error):
            #expect(error.kind == .responseTooLarge)
            #expect(error.code == "TRANSPORT_RESPONSE_TOO_LARGE")
            #expect(FCMClient.outcome(for: error).label == "retryable")
        }

        let ordinary = CurlTransport(configuration: CurlTransportConfiguration())
        defer { ordinary.shutdown() }
        let answer = try await ordinary.send(request).get()
        #expect(answer.status == 404)
        #expect(answer.body.count > 64)
    }
}

@Suite struct CleartextPolicyTests {
    @Test(arguments: ["http://127.0.0.1:8080", "http://127.1.2.3/x", "http://localhost:1", "http://LOCALHOST/", "http://[::1]:9/token",
                      "https://fcm.googleapis.com", "https://10.0.0.1/token", "http://user@127.0.0.1/"])
    func loopbackHTTPAndAnyHTTPSAreAllowed(url: String) {
        #expect(CleartextPolicy.problem(url: url, allowInsecureHTTP: false) == nil)
    }

    @Test(arguments: ["http://fcm.example.com", "http://10.0.0.1:8080", "http://128.0.0.1/", "http://127.0.0.1.evil.com/",
                      "http://localhost.evil.com/", "http://[::2]/", "http://127.0.0.1@evil.com/", "http://1270.0.0.1/"])
    func otherHTTPHostsNeedTheFlag(url: String) {
        #expect(CleartextPolicy.problem(url: url, allowInsecureHTTP: false)?.contains("--allow-insecure-http") == true, "\(url)")
        #expect(CleartextPolicy.problem(url: url, allowInsecureHTTP: true) == nil)
    }

    @Test func aServiceAccountWithARemoteHTTPTokenURIIsRefusedNamingTheFileAndField() throws {
        let json = TestKeys.serviceAccountJSON(privateKey: TestKeys.shared, tokenURI: "http://oauth.example.com/token")
        do {
            _ = try ServiceAccount.parse(json, file: "/etc/sa.json")
            Issue.record("accepted an http:// token_uri on a remote host")
        } catch {
            #expect("\(error)".contains("/etc/sa.json"))
            #expect("\(error)".contains("token_uri"))
            #expect("\(error)".contains("loopback"))
        }
        #expect(try ServiceAccount.parse(json, file: "/etc/sa.json", allowInsecureHTTP: true).tokenURI == "http://oauth.example.com/token")
        let local = TestKeys.serviceAccountJSON(privateKey: TestKeys.shared, tokenURI: "http://127.0.0.1:4000/token")
        #expect(try ServiceAccount.parse(local, file: "sa.json").tokenURI == "http://127.0.0.1:4000/token")
    }
}
