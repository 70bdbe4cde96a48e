import BrokerHarness
import EmulatorKit
import Foundation
import Testing
@testable import FCM

/// H2Transport on its own against the real in-process emulator (h2c and TLS) and against ports
/// that refuse or never answer. Requests carry a bearer token that no error may repeat.
@Suite(.serialized, .timeLimit(.minutes(3))) struct H2TransportTests {
    static let bearer = "Authorization: Bearer ya29.secret-test-token"

    /// An emulator without auth and an H2Transport pointed at it.
    struct Fixture {
        let harness: EmulatorHarness
        let transport: H2Transport

        init(tls: Bool = false, trustCA: Bool = true, configure: (inout EmulatorConfiguration) -> Void = { _ in },
             transport adjust: (inout CurlTransportConfiguration) -> Void = { _ in }) throws {
            harness = try EmulatorHarness(tls: tls, configure: {
                $0.requireAuth = false
                configure(&$0)
            })
            var configuration = CurlTransportConfiguration()
            configuration.requestTimeout = .seconds(10)
            if tls, trustCA { configuration.caFile = harness.directory + "/cert.pem" }
            adjust(&configuration)
            transport = H2Transport(configuration: configuration)
        }

        var sendURL: String { harness.emulator.baseURL + "/v1/projects/\(EmulatorHarness.project)/messages:send" }

        func send(token: String, url: String? = nil) async -> Result<HTTPResponse, TransportError> {
            await transport.send(H2TransportTests.request(url: url ?? sendURL, token: token))
        }

        func stop() {
            transport.shutdown()
            harness.stop()
        }
    }

    static func request(url: String, token: String) -> HTTPRequest {
        HTTPRequest(url: url, headers: ["Content-Type: application/json", bearer], body: EmulatorHarness.body(token: token))
    }

    static func error(_ result: Result<HTTPResponse, TransportError>) -> TransportError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    /// A transport with `adjust`ed settings, for the tests without an emulator.
    static func transport(_ adjust: (inout CurlTransportConfiguration) -> Void) -> H2Transport {
        var configuration = CurlTransportConfiguration()
        adjust(&configuration)
        return H2Transport(configuration: configuration)
    }

    @Test(arguments: [false, true])
    func threeHundredConcurrentSendsSucceed(tls: Bool) async throws {
        let fixture = try Fixture(tls: tls, configure: { $0.latency = .fixed(.milliseconds(20)) })
        defer { fixture.stop() }
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<300 {
                group.addTask {
                    switch await fixture.send(token: "many-\(index)") {
                    case .success(let response): return response.status
                    case .failure: return -1
                    }
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 300)
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses.filter { $0 != 200 }.prefix(5))")
        #expect(Set(fixture.harness.emulator.recordedMessages().compactMap(\.token)).count == 300)
        // 100 streams per connection: 300 at once need 3 connections, no more.
        #expect(fixture.transport.connectionsOpened == 3)
    }

    @Test func responseCarriesStatusBodyAndRetryAfter() async throws {
        let fixture = try Fixture(configure: { $0.retryAfterSeconds = 7 })
        defer { fixture.stop() }
        let sent = try await fixture.send(token: "device-1").get()
        #expect(sent.status == 200)
        #expect(String(decoding: sent.body, as: UTF8.self).contains("projects/\(EmulatorHarness.project)/messages/"))
        let refused = try await fixture.send(token: "unavailable-1").get()
        #expect(refused.status == 503)
        #expect(refused.retryAfter == "7")
    }

    /// A stream reset after its 200 status and half its body: the server processed the request,
    /// so the transport returns the response (failing it would have the message sent again).
    @Test(arguments: [false, true]) func streamResetAfterA200StatusIsReturnedAsTheResponse(tls: Bool) async throws {
        let fixture = try Fixture(tls: tls)
        defer { fixture.stop() }
        let result = await fixture.send(token: "cut-1")
        guard case .success(let response) = result else {
            Issue.record("expected the cut answer as a response, got \(result)")
            return
        }
        #expect(response.status == 200)
        #expect(fixture.harness.emulator.recordedMessages().compactMap(\.token) == ["cut-1"])
        #expect(Self.error(await fixture.send(token: "after-the-cut")) == nil)
    }

    /// Streams the server refused with its GOAWAY (above the last stream id) go out again on
    /// another connection; the ones it accepted are answered where they are. Every request is
    /// processed exactly once (the emulator's record), none fails.
    @Test func goawayRequeuesUnprocessedStreamsOnAnotherConnectionAndSendsNothingTwice() async throws {
        let fixture = try Fixture(configure: {
            $0.goawayEveryRequests = 25
            $0.latency = .fixed(.milliseconds(5))
        })
        defer { fixture.stop() }
        let failures = await withTaskGroup(of: TransportError?.self) { group in
            for index in 0..<200 { group.addTask { Self.error(await fixture.send(token: "goaway-\(index)")) } }
            return await group.reduce(into: [TransportError]()) { if let e = $1 { $0.append(e) } }
        }
        #expect(failures.isEmpty, "\(failures.count) failed, e.g. \(failures.prefix(3))")
        let tokens = fixture.harness.emulator.recordedMessages().compactMap(\.token)
        #expect(Set(tokens).count == 200)
        #expect(tokens.count == 200, "each request processed once, got \(tokens.count) sends")
        #expect(fixture.transport.connectionsOpened >= 8)
        #expect(fixture.transport.requestsRequeued > 0, "some streams were refused and sent again")
    }

    @Test func refusedPortIsConnectFailed() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let transport = H2Transport()
        defer { transport.shutdown() }
        let started = ContinuousClock.now
        let result = await transport.send(Self.request(url: "http://127.0.0.1:\(refusing.port)/v1/x", token: "t"))
        let error = try #require(Self.error(result))
        #expect(error.kind == .connectFailed, "\(error)")
        #expect(error.message.contains("refused"), "\(error)")
        #expect(!error.description.contains("Bearer") && !error.description.contains("secret"))
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func silentPortTimesOutTheTLSHandshakeAsConnectFailed() async throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let transport = Self.transport {
            $0.connectTimeout = .milliseconds(300)
            $0.requestTimeout = .seconds(20)
        }
        defer { transport.shutdown() }
        let started = ContinuousClock.now
        let result = await transport.send(Self.request(url: "https://127.0.0.1:\(silent.port)/v1/x", token: "t"))
        let elapsed = ContinuousClock.now - started
        let error = try #require(Self.error(result))
        #expect(error.kind == .connectFailed, "\(error)")
        #expect(error.message.contains("timed out"), "\(error)")
        #expect(elapsed >= .milliseconds(250) && elapsed < .seconds(3), "\(elapsed)")
        #expect(!error.description.contains("Bearer"))
    }

    @Test func silentCleartextPortTimesOutTheRequest() async throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let transport = Self.transport { $0.requestTimeout = .milliseconds(400) }
        defer { transport.shutdown() }
        let started = ContinuousClock.now
        let error = try #require(Self.error(await transport.send(Self.request(url: "http://127.0.0.1:\(silent.port)/v1/x", token: "t"))))
        // The request went whole into the socket (h2c needs no answer before it): possibly delivered.
        #expect(error.kind == .timeoutAfterSend, "\(error)")
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    /// A request that never left (its TLS handshake never finished) times out as plain
    /// `.timeout`: FCM cannot have it, so nothing is marked possibly delivered.
    @Test func aRequestThatNeverLeftTimesOutAsNotSent() async throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let transport = Self.transport { $0.requestTimeout = .milliseconds(400) }
        defer { transport.shutdown() }
        let error = try #require(Self.error(await transport.send(Self.request(url: "https://127.0.0.1:\(silent.port)/v1/x", token: "t"))))
        #expect(error.kind == .timeout, "\(error)")
        #expect(error.code == "TRANSPORT_TIMEOUT")
    }

    /// A connection whose peer stops answering (here: never did) is dropped after its request
    /// timed out and the PING that followed went unanswered; the next request gets a new one.
    @Test func connectionThatDoesNotAnswerAPingIsReplaced() async throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let transport = Self.transport { $0.requestTimeout = .milliseconds(300) }
        defer { transport.shutdown() }
        let url = "http://127.0.0.1:\(silent.port)/v1/x"
        #expect(Self.error(await transport.send(Self.request(url: url, token: "t")))?.kind == .timeoutAfterSend)
        #expect(transport.connectionsOpened == 1)
        try await Task.sleep(for: .milliseconds(1500))  // the PING's 1 s and a scan
        #expect(Self.error(await transport.send(Self.request(url: url, token: "t")))?.kind == .timeoutAfterSend)
        #expect(transport.connectionsOpened == 2)
    }

    /// Second audit, finding 6: a request that timed out after being sent whole is answered only
    /// once its connection's fate is known, and a connection whose PING went unanswered is
    /// aborted (a reset), so that the kernel drops the request's bytes instead of delivering them
    /// when the route comes back, after the request's retry.
    @Test func aRequestTimedOutOnADeadConnectionIsAnsweredOnceTheConnectionIsAborted() async throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let transport = Self.transport { $0.requestTimeout = .milliseconds(300) }
        defer { transport.shutdown() }
        let started = ContinuousClock.now
        let error = try #require(Self.error(await transport.send(Self.request(url: "http://127.0.0.1:\(silent.port)/v1/x", token: "t"))))
        let waited = ContinuousClock.now - started
        #expect(error.kind == .timeoutAfterSend, "\(error)")
        #expect(waited >= .milliseconds(1_200), "answered after \(waited), before the PING's 1 s told the connection's fate")
        let ended = try #require(silent.takeConnection(), "the connection is in the backlog")
        #expect(ended.bytes > 0, "the request reached the peer's socket")
        #expect(ended.reset, "the dead connection ended with a FIN: its kernel would still send what it held")
    }

    @Test func untrustedCertificateIsTLS() async throws {
        let fixture = try Fixture(tls: true, trustCA: false)
        defer { fixture.stop() }
        let error = try #require(Self.error(await fixture.send(token: "t")))
        #expect(error.kind == .tls, "\(error)")
        #expect(error.message.contains("certificate verify failed"), "\(error)")
        #expect(!error.description.contains("Bearer"))
        #expect(fixture.harness.emulator.recordedMessages().isEmpty)
    }

    /// The emulator's certificate names IP 127.0.0.1 only; reached as "localhost" it must fail.
    @Test func certificateForAnotherNameIsTLS() async throws {
        let fixture = try Fixture(tls: true)
        defer { fixture.stop() }
        #expect((try? await fixture.send(token: "by-ip").get().status) == 200)
        let url = "https://localhost:\(fixture.harness.emulator.port)/v1/projects/\(EmulatorHarness.project)/messages:send"
        let error = try #require(Self.error(await fixture.send(token: "by-name", url: url)))
        #expect(error.kind == .tls, "\(error)")
        #expect(error.message.contains("certificate verify failed"), "\(error)")
        #expect(fixture.harness.emulator.recordedMessages().compactMap(\.token) == ["by-ip"])
    }

    @Test func requestTimeoutResetsTheStreamAndKeepsTheConnection() async throws {
        let fixture = try Fixture(transport: { $0.requestTimeout = .milliseconds(400) })
        defer { fixture.stop() }
        #expect((try? await fixture.send(token: "warm-up").get().status) == 200)
        let started = ContinuousClock.now
        let error = try #require(Self.error(await fixture.send(token: "slow3000-x")))
        #expect(error.kind == .timeoutAfterSend, "\(error)")
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(!error.description.contains("Bearer"))
        #expect((try? await fixture.send(token: "after").get().status) == 200)
        #expect(fixture.transport.connectionsOpened == 1)
    }

    @Test func oversizeResponseIsResponseTooLarge() async throws {
        // An unknown path gets the emulator's HTML 404 page, well over 64 bytes.
        let fixture = try Fixture(transport: { $0.maxResponseBytes = 64 })
        defer { fixture.stop() }
        let error = try #require(Self.error(await fixture.send(token: "t", url: fixture.harness.emulator.baseURL + "/nowhere")))
        #expect(error.kind == .responseTooLarge, "\(error)")
        #expect(!error.description.contains("Bearer"))
        // The stream was reset, not the connection: the next request goes over the same one.
        let again = try #require(Self.error(await fixture.send(token: "t", url: fixture.harness.emulator.baseURL + "/nowhere")))
        #expect(again.kind == .responseTooLarge, "\(again)")
        #expect(fixture.transport.connectionsOpened == 1)
    }

    @Test(arguments: [false, true])
    func emulatorStoppedMidFlightIsConnectionLost(tls: Bool) async throws {
        let fixture = try Fixture(tls: tls, configure: { $0.latency = .fixed(.seconds(5)) })
        defer { fixture.stop() }
        let results = await withTaskGroup(of: TransportError?.self) { group in
            for index in 0..<10 { group.addTask { Self.error(await fixture.send(token: "lost-\(index)")) } }
            try? await Task.sleep(for: .milliseconds(500))
            fixture.harness.emulator.stop()
            return await group.reduce(into: [TransportError?]()) { $0.append($1) }
        }
        #expect(results.count == 10)
        #expect(results.allSatisfy { $0?.kind == .connectionLost }, "\(results)")
        #expect(results.allSatisfy { $0.map { !$0.description.contains("Bearer") } ?? false })
    }

    @Test func shutdownResumesEveryRequestInFlightPromptly() async throws {
        let fixture = try Fixture(configure: { $0.latency = .fixed(.seconds(20)) })
        defer { fixture.harness.stop() }
        let started = ContinuousClock.now
        let results = await withTaskGroup(of: TransportError?.self) { group in
            for index in 0..<20 { group.addTask { Self.error(await fixture.send(token: "pending-\(index)")) } }
            try? await Task.sleep(for: .milliseconds(500))
            fixture.transport.shutdown()
            return await group.reduce(into: [TransportError?]()) { $0.append($1) }
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0?.kind == .shutdown }, "\(results)")
        // After shutdown a send fails at once.
        #expect(Self.error(await fixture.send(token: "late"))?.kind == .shutdown)
    }

    @Test func shutdownClosesEveryDescriptor() async throws {
        let plain = try EmulatorHarness(configure: { $0.requireAuth = false })
        let secure = try EmulatorHarness(tls: true, configure: { $0.requireAuth = false })
        defer {
            plain.stop()
            secure.stop()
        }
        let before = OpenDescriptors.count
        var configuration = CurlTransportConfiguration()
        configuration.caFile = secure.directory + "/cert.pem"
        let transport = H2Transport(configuration: configuration)
        for harness in [plain, secure] {
            let url = harness.emulator.baseURL + "/v1/projects/\(EmulatorHarness.project)/messages:send"
            let statuses = await withTaskGroup(of: Int.self) { group in
                for index in 0..<150 {
                    group.addTask { (try? await transport.send(Self.request(url: url, token: "fd-\(index)")).get().status) ?? -1 }
                }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == 200 })
        }
        #expect(OpenDescriptors.count > before)
        transport.shutdown()
        // The emulator closes its side of each connection on its own thread.
        #expect(await eventually { OpenDescriptors.count <= before }, "\(OpenDescriptors.count) open, \(before) before")
    }
}
