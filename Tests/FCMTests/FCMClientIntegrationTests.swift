import BrokerHarness
import EmulatorKit
import Foundation
import Synchronization
import Testing
@testable import FCM

/// FCMClient against the real in-process emulator over HTTP/2 (h2c and TLS). Serialized: each
/// test starts its own emulator, and the machine is small.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FCMClientIntegrationTests {
    @Test(arguments: FCMTransportKind.allCases)
    func sendsOverCleartextHTTP2(transport: FCMTransportKind) async throws {
        let harness = try EmulatorHarness(transport: transport)
        defer { harness.stop() }
        let outcome = await harness.send(token: "device-token-1")
        guard case .sent(let name) = outcome else {
            Issue.record("expected sent, got \(outcome)")
            return
        }
        #expect(name.hasPrefix("projects/\(EmulatorHarness.project)/messages/"))
        let recorded = harness.emulator.recordedMessages()
        #expect(recorded.map(\.token) == ["device-token-1"])
        #expect(recorded.first?.name == name)
    }

    @Test(arguments: FCMTransportKind.allCases)
    func sendsOverTLSWithAPrivateCA(transport: FCMTransportKind) async throws {
        let harness = try EmulatorHarness(tls: true, transport: transport)
        defer { harness.stop() }
        let outcome = await harness.send(token: "device-token-tls")
        #expect(outcome.label == "sent", "\(outcome)")
        #expect(harness.emulator.recordedMessages().map(\.token) == ["device-token-tls"])
    }

    @Test func refusesAnUntrustedCertificate() async throws {
        let harness = try EmulatorHarness(tls: true, trustCA: false)
        defer { harness.stop() }
        let outcome = await harness.send(token: "device-token-tls")
        // The token endpoint is on the same untrusted server: the failure surfaces there, and
        // pauses the project (the send waits; nothing is judged about the message).
        #expect(outcome.label == "deferred", "\(outcome)")
        #expect(outcome.failure?.code == "OAUTH_TLS")
        #expect(harness.client.rateLimiter.pausedProjects()[.tls] == 1)
        #expect(harness.emulator.recordedMessages().isEmpty)
        #expect(harness.emulator.stats().tokensIssued == 0)
    }

    @Test(arguments: [
        ("unregistered-a", "invalid_token", "UNREGISTERED", 404),
        ("invalid-a", "invalid_token", "INVALID_ARGUMENT", 400),
        ("mismatch-a", "rejected", "SENDER_ID_MISMATCH", 403),
        ("unavailable-a", "retryable", "UNAVAILABLE", 503),
        ("internal-a", "retryable", "INTERNAL", 500),
        ("thirdparty-a", "configuration_failed", "THIRD_PARTY_AUTH_ERROR", 401),
        ("quota-a", "retryable", "QUOTA_EXCEEDED", 429),
    ])
    func everyErrorKindIsClassified(token: String, label: String, code: String, status: Int) async throws {
        let harness = try EmulatorHarness(configure: { $0.retryAfterSeconds = 7 })
        defer { harness.stop() }
        let outcome = await harness.send(token: token)
        #expect(outcome.label == label, "\(outcome)")
        #expect(outcome.failure?.code == code)
        #expect(outcome.failure?.httpStatus == status)
        #expect(outcome.failure?.message.isEmpty == false)
        if case .retryable(_, let retryAfter) = outcome, status == 429 || status == 503 {
            #expect(retryAfter == .seconds(7))
        }
        if label == "configuration_failed" {
            // THIRD_PARTY_AUTH_ERROR is a 401 too, but not about our token: no refresh, no resend.
            #expect(harness.emulator.stats().tokensIssued == 1)
        }
    }

    @Test func aWrongFcmURLPathIsAConfigurationFailureNeverAnInvalidToken() async throws {
        // The emulator answers unknown paths like Google's front end: an HTML 404 page.
        let harness = try EmulatorHarness(configureClient: { $0.baseURL += "/fcm-typo" })
        defer { harness.stop() }
        let outcome = await harness.send(token: "unregistered-would-be-pruned")
        #expect(outcome.label == "configuration_failed", "\(outcome)")
        #expect(outcome.failure?.code == "UNEXPECTED_RESPONSE")
        #expect(outcome.failure?.httpStatus == 404)
        #expect(outcome.failure?.message.contains("Error 404 (Not Found)") == true)
        #expect(harness.emulator.recordedMessages().isEmpty)
        #expect(await harness.send(token: "next").failure?.code == "PROJECT_PAUSED")
    }

    @Test func invalidMessageBodyIsRejected() async throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        let body = Array(#"{"message":{"token":"t","notificaton":{"title":"typo"}}}"#.utf8)
        let outcome = await harness.client.send(projectID: EmulatorHarness.project, messageBody: body, credentials: .serviceAccount(harness.account))
        #expect(outcome.label == "rejected", "\(outcome)")
        #expect(outcome.failure?.code == "INVALID_ARGUMENT")
    }

    @Test func quotaRetryAfterPausesTheWholeProject() async throws {
        let harness = try EmulatorHarness(configure: { $0.retryAfterSeconds = 3 }, configureClient: {
            $0.rateLimit.minimumQuotaPause = .zero
            $0.rateLimit.maxWait = .seconds(10)
        })
        defer { harness.stop() }
        let quota = await harness.send(token: "quota-1")
        #expect(quota == .retryable(FCMFailure(code: "QUOTA_EXCEEDED", httpStatus: 429, message: quota.failure?.message ?? ""),
                                    retryAfter: .seconds(3)))
        // The pause is Retry-After long, no more; the next send waits it out (a lower bound that
        // follows from the pause itself, not a guess about the machine's speed).
        let start = ContinuousClock.now
        let remaining = harness.client.rateLimiter.pauseRemaining(project: EmulatorHarness.project)
        #expect(remaining > .zero && remaining <= .seconds(3), "\(remaining)")
        let next = await harness.send(token: "after-pause")
        #expect(next.label == "sent")
        #expect(ContinuousClock.now - start >= remaining)
        #expect(harness.emulator.recordedMessages().map(\.token) == ["after-pause"])
    }

    @Test func longPauseDefersWithoutReachingFCM() async throws {
        let harness = try EmulatorHarness(configure: { $0.retryAfterSeconds = 90 })
        defer { harness.stop() }
        _ = await harness.send(token: "quota-1")
        let deferred = await harness.send(token: "would-be-sent")
        guard case .deferred(let failure, let retryAfter) = deferred else {
            Issue.record("expected deferred, got \(deferred)")
            return
        }
        #expect(failure.code == "PROJECT_PAUSED")
        #expect((retryAfter ?? .zero) > .seconds(85))
        #expect(harness.emulator.recordedMessages().isEmpty)
    }

    @Test(arguments: [true, false])
    func manyConcurrentSendsShareOneTokenFetch(tls: Bool) async throws {
        let harness = try EmulatorHarness(tls: tls, configure: { $0.latency = .fixed(.milliseconds(20)) })
        defer { harness.stop() }
        let outcomes = await withTaskGroup(of: FCMOutcome.self) { group in
            for index in 0..<300 { group.addTask { await harness.send(token: "concurrent-\(index)") } }
            return await group.reduce(into: [FCMOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0.label != "sent" }.count == 0, "\(outcomes.first { $0.label != "sent" }.map { "\($0)" } ?? "")")
        #expect(harness.emulator.stats().tokensIssued == 1)
        #expect(await harness.client.tokens.fetchCount == 1)
        #expect(Set(harness.emulator.recordedMessages().compactMap(\.token)).count == 300)
    }

    @Test func tokenIsRefreshedAheadOfExpiry() async throws {
        // Tokens live 4 s; the client refreshes 3 s before expiry, so after ~1 s it fetches anew
        // while the old token still works: the server never sees an expired token.
        let harness = try EmulatorHarness(configure: { $0.accessTokenLifetime = .seconds(4) },
                                          configureClient: {
                                              $0.tokenRefreshMargin = .seconds(3)
                                              $0.minimumTokenLifetime = .seconds(1)
                                          })
        defer { harness.stop() }
        #expect(await harness.send(token: "first").label == "sent")
        #expect(harness.emulator.stats().tokensIssued == 1)
        var sends = 1
        let refreshed = await eventually(timeout: .seconds(8)) {
            sends += 1
            guard await harness.send(token: "refresh-\(sends)").label == "sent" else { return false }
            return harness.emulator.stats().tokensIssued >= 2
        }
        #expect(refreshed)
        #expect(harness.emulator.stats().count("UNAUTHENTICATED") == 0)
    }

    /// Through `start` too: there the 401 for the cached token is read on the transport's thread.
    @Test(arguments: EmulatorHarness.Entry.allCases)
    func unauthenticatedTokenIsRefreshedOnceAndResent(via entry: EmulatorHarness.Entry) async throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        #expect(await harness.send(token: "before", via: entry).label == "sent")
        harness.emulator.expireAccessTokens()
        let outcome = await harness.send(token: "after-expiry", via: entry)
        #expect(outcome.label == "sent", "\(outcome)")
        #expect(harness.emulator.stats().tokensIssued == 2)
        #expect(harness.emulator.stats().count("UNAUTHENTICATED") == 1)
        #expect(harness.emulator.recordedMessages().map(\.token) == ["before", "after-expiry"])
    }

    @Test func concurrentUnauthenticatedSendsShareOneRefresh() async throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        #expect(await harness.send(token: "before").label == "sent")
        harness.emulator.expireAccessTokens()
        let outcomes = await withTaskGroup(of: FCMOutcome.self) { group in
            for index in 0..<50 { group.addTask { await harness.send(token: "stale-\(index)") } }
            return await group.reduce(into: [FCMOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0.label != "sent" }.isEmpty)
        #expect(harness.emulator.stats().tokensIssued == 2)
    }

    @Test func tokenRefusedAgainAfterRefreshIsAnAuthFailure() async throws {
        // Every token stops working at once: 401, one refresh and resend, 401 again.
        let harness = try EmulatorHarness(configure: { $0.accessTokenEarlyExpiry = .zero })
        defer { harness.stop() }
        let outcome = await harness.send(token: "never")
        #expect(outcome.label == "auth_failed", "\(outcome)")
        #expect(outcome.failure?.code == "UNAUTHENTICATED")
        #expect(outcome.failure?.httpStatus == 401)
        #expect(harness.emulator.stats().tokensIssued == 2)
        #expect(!"\(outcome)".contains("ya29"))
    }

    /// The token endpoint refusing the account is a fault of the setup, not a verdict on the
    /// message: the project pauses as `auth` and the send waits.
    @Test func unknownServiceAccountPausesTheProjectWithoutSecrets() async throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        let stranger = ServiceAccount(projectID: EmulatorHarness.project, privateKeyID: "other",
                                      privateKey: TestKeys.shared, clientEmail: "stranger@x.iam.gserviceaccount.com",
                                      tokenURI: harness.account.tokenURI)
        let outcome = await harness.client.send(projectID: EmulatorHarness.project,
                                                messageBody: EmulatorHarness.body(token: "t"), credentials: .serviceAccount(stranger))
        #expect(outcome.label == "deferred", "\(outcome)")
        #expect(outcome.failure?.code == "OAUTH_REFUSED")
        #expect(harness.client.rateLimiter.pausedProjects()[.auth] == 1)
        let text = "\(outcome)"
        #expect(!text.contains("PRIVATE KEY"))
        #expect(!text.contains(TestKeys.shared.split(separator: "\n")[1]))
        #expect(harness.emulator.recordedMessages().isEmpty)
    }

    /// Over TLS the requests share multiplexed connections, so GOAWAY cuts streams in flight:
    /// the refused ones are sent again, and nothing reaches FCM twice.
    @Test(arguments: [true, false], FCMTransportKind.allCases)
    func goawayMidStreamLosesNoSendAndSendsNothingTwice(tls: Bool, transport: FCMTransportKind) async throws {
        let harness = try EmulatorHarness(tls: tls, transport: transport, configure: {
            $0.goawayEveryRequests = 25
            $0.latency = .fixed(.milliseconds(5))
        })
        defer { harness.stop() }
        let outcomes = await withTaskGroup(of: (Int, FCMOutcome).self) { group in
            for index in 0..<200 { group.addTask { (index, await harness.send(token: "goaway-\(index)")) } }
            return await group.reduce(into: [(Int, FCMOutcome)]()) { $0.append($1) }
        }
        let failed = outcomes.filter { $0.1.label != "sent" }
        #expect(failed.isEmpty, "\(failed.count) failed, e.g. \(failed.prefix(3))")
        let tokens = harness.emulator.recordedMessages().compactMap(\.token)
        #expect(Set(tokens) == Set((0..<200).map { "goaway-\($0)" }))
        #expect(tokens.count == 200, "each send reached FCM once, got \(tokens.count)")
    }

    /// An answer cut after its 200 status (HTTP/2: the stream reset mid-body; HTTP/1.1: the
    /// connection closed mid-body) means FCM accepted the message: it counts as sent and is not
    /// sent again, and the next send still goes through. On the nghttp2 transport only: libcurl
    /// 7.88 drops the status when the reset arrives with the headers.
    @Test(arguments: [true, false])
    func answerCutAfterItsStatusCountsAsSentAndIsNotSentAgain(tls: Bool) async throws {
        let harness = try EmulatorHarness(tls: tls, transport: .nghttp2)
        defer { harness.stop() }
        let outcomes = await withTaskGroup(of: FCMOutcome.self) { group in
            for index in 0..<20 { group.addTask { await harness.send(token: "cut-\(index)") } }
            return await group.reduce(into: [FCMOutcome]()) { $0.append($1) }
        }
        let notSent = outcomes.filter { $0.label != "sent" }
        #expect(notSent.isEmpty, "\(notSent.count) not sent, e.g. \(notSent.prefix(3))")
        let tokens = harness.emulator.recordedMessages().compactMap(\.token)
        #expect(tokens.count == 20, "each cut answer's message reached FCM once, got \(tokens.count)")
        #expect(await harness.send(token: "after-the-cuts").label == "sent")
    }

    @Test(arguments: FCMTransportKind.allCases)
    func slowAnswerTimesOutAsRetryable(transport: FCMTransportKind) async throws {
        let harness = try EmulatorHarness(transport: transport, configureClient: { $0.transport.requestTimeout = .milliseconds(500) })
        defer { harness.stop() }
        #expect(await harness.send(token: "warm-up").label == "sent")
        let outcome = await harness.send(token: "slow3000-x")
        #expect(outcome.label == "retryable")
        // Sent whole, so possibly delivered: the nghttp2 transport can tell; libcurl cannot.
        #expect(outcome.failure?.code == (transport == .nghttp2 ? "TRANSPORT_TIMEOUT_AFTER_SEND" : "TRANSPORT_TIMEOUT"))
    }

    @Test(arguments: FCMTransportKind.allCases)
    func anUnreachableTokenEndpointDefersTheSend(transport: FCMTransportKind) async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let port = refusing.port
        var configuration = FCMClient.Configuration()
        configuration.baseURL = "http://127.0.0.1:\(port)"
        configuration.transportKind = transport
        let client = FCMClient(configuration: configuration)
        defer { client.shutdown() }
        let account = ServiceAccount(projectID: "p", privateKeyID: "k", privateKey: TestKeys.shared,
                                     clientEmail: "a@b", tokenURI: "http://127.0.0.1:\(port)/token")
        let outcome = await client.send(projectID: "p", messageBody: EmulatorHarness.body(token: "t"), credentials: .serviceAccount(account))
        #expect(outcome.label == "deferred", "\(outcome)")
        #expect(outcome.failure?.code == "OAUTH_UNAVAILABLE")
        #expect(client.rateLimiter.pausedProjects()[.token] == 1)
    }
}

/// A token endpoint served over plain HTTP/1.1 (a local or test one, on loopback): the token
/// request speaks HTTP/1.1 to it, not HTTP/2 with prior knowledge (issue 32, low item).
@Suite(.serialized, .timeLimit(.minutes(1))) struct HTTP1TokenEndpointTests {
    static let server = #"""
    import http.server, sys
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            body = b'{"access_token":"ya29.h1","expires_in":3600,"token_type":"Bearer"}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a): pass
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(s.server_address[1], flush=True)
    s.serve_forever()
    """#

    @Test(arguments: FCMTransportKind.allCases)
    func aPlainHTTP1TokenEndpointOnLoopbackGrantsTokens(transport: FCMTransportKind) async throws {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", Self.server]
        let out = Pipe()
        python.standardOutput = out
        python.standardError = FileHandle.nullDevice  // never the test runner's pipe: it waits for its EOF
        try python.run()
        defer { python.terminate() }
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let port = try #require(Int(line), "the token server did not say its port: \(line)")
        let harness = try EmulatorHarness(transport: transport, configure: { $0.requireAuth = false })
        defer { harness.stop() }
        let account = ServiceAccount(projectID: EmulatorHarness.project, privateKeyID: "k", privateKey: TestKeys.shared,
                                     clientEmail: "a@b", tokenURI: "http://127.0.0.1:\(port)/token")
        let outcome = await harness.client.send(projectID: EmulatorHarness.project, messageBody: EmulatorHarness.body(token: "h1-token"),
                                                credentials: .serviceAccount(account))
        #expect(outcome.label == "sent", "\(outcome)")
    }
}
