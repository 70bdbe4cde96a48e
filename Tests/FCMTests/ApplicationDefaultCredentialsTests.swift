import EmulatorKit
import Foundation
import Synchronization
import Testing
@testable import FCM

/// Keyless credentials (issue 51): an App ID with no `credentials_file` uses Application Default
/// Credentials as Google's libraries find them, and the metadata server's tokens are fetched
/// like a service account's: cached, refreshed before expiry, one fetch in flight, an outage
/// told to the observer. Against the real emulator in its metadata-server mode.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ApplicationDefaultCredentialsTests {
    /// Token fetches as the observer hears them (`cause`: `ok`, `http_503`, …).
    final class Heard: FCMExchangeObserver {
        let causes = Mutex<[String]>([])
        func exchangeStarted() {}
        func exchangeFinished(status: Int?, duration: Duration) {}
        func tokenFetchFinished(status: Int?, cause: String) { causes.withLock { $0.append(cause) } }
    }

    @Test func aNamedFileWinsThenTheEnvironmentsFileThenTheMetadataServer() throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        let file = harness.directory + "/sa.json"
        let other = harness.directory + "/other.json"
        try FileManager.default.copyItem(atPath: file, toPath: other)
        let named = try Credentials.resolve(credentialsFile: file, environment: ["GOOGLE_APPLICATION_CREDENTIALS": "/nowhere"],
                                            allowInsecureHTTP: false)
        #expect(named == .serviceAccount(harness.account))
        let fromVariable = try Credentials.resolve(credentialsFile: nil, environment: ["GOOGLE_APPLICATION_CREDENTIALS": other],
                                                   allowInsecureHTTP: false)
        #expect(fromVariable == .serviceAccount(harness.account))
        #expect(try Credentials.resolve(credentialsFile: nil, environment: [:], allowInsecureHTTP: false)
                == .metadataServer(host: "metadata.google.internal"))
        #expect(try Credentials.resolve(credentialsFile: nil, environment: ["GCE_METADATA_HOST": "127.0.0.1:8085",
                                                                            "GOOGLE_APPLICATION_CREDENTIALS": ""], allowInsecureHTTP: false)
                == .metadataServer(host: "127.0.0.1:8085"))
    }

    @Test func aBadFileNamedByTheEnvironmentIsRefusedNamingTheVariableAndABadHostIsRefused() {
        #expect {
            try Credentials.resolve(credentialsFile: nil, environment: ["GOOGLE_APPLICATION_CREDENTIALS": "/nowhere/sa.json"],
                                    allowInsecureHTTP: false)
        } throws: { "\($0)" == "service account file GOOGLE_APPLICATION_CREDENTIALS=/nowhere/sa.json: cannot be read" }
        #expect {
            try Credentials.resolve(credentialsFile: nil, environment: ["GCE_METADATA_HOST": "http://evil/x"], allowInsecureHTTP: false)
        } throws: { "\($0)".contains("GCE_METADATA_HOST: must be HOST or HOST:PORT") }
    }

    /// The other Application Default Credentials files are refused saying why (decision 0097).
    @Test func aUsersLoginFileIsRefusedSayingWhatToUseInstead() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("adc-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(#"{"type": "authorized_user", "client_id": "x", "client_secret": "s3cret", "refresh_token": "r"}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        #expect {
            try Credentials.resolve(credentialsFile: nil, environment: ["GOOGLE_APPLICATION_CREDENTIALS": path], allowInsecureHTTP: false)
        } throws: {
            let text = "\($0)"
            return text.contains("GOOGLE_APPLICATION_CREDENTIALS=\(path)") && text.contains("not for servers") && !text.contains("s3cret")
        }
    }

    @Test func theMetadataServersTokenIsFetchedOnceForManyCallersAndRefreshedBeforeItExpires() async throws {
        let harness = try EmulatorHarness(configure: { $0.metadataServer = true; $0.accessTokenLifetime = .seconds(4) })
        defer { harness.stop() }
        let heard = Heard()
        let transport = CurlTransport(configuration: CurlTransportConfiguration())
        defer { transport.shutdown() }
        let source = AccessTokenSource(transport: transport, refreshMargin: .seconds(1), minimumLifetime: .seconds(1), observer: heard)
        let credentials = Credentials.metadataServer(host: "127.0.0.1:\(harness.emulator.port)")
        let tokens = try await withThrowingTaskGroup(of: AccessToken.self) { group in
            for _ in 0..<50 { group.addTask { try await source.token(for: credentials) } }
            return try await group.reduce(into: [AccessToken]()) { $0.append($1) }
        }
        #expect(Set(tokens.map(\.value)).count == 1, "one token for 50 callers")
        #expect(harness.emulator.stats().tokensIssued == 1)
        // Refreshed a second before its 4 s run out, before anyone is refused with it.
        try await Task.sleep(for: .seconds(3.3))
        let refreshed = try await source.token(for: credentials)
        #expect(refreshed.value != tokens[0].value)
        #expect(harness.emulator.stats().tokensIssued == 2)
        #expect(heard.causes.withLock { $0 } == ["ok", "ok"])
    }

    @Test func aMetadataServerOutageFailsTheFetchAsUnavailableAndIsTold() async throws {
        let harness = try EmulatorHarness(configure: { $0.metadataServer = true })
        defer { harness.stop() }
        harness.emulator.setTokenEndpointFault(.unavailable(status: 503, retryAfterSeconds: nil))
        let heard = Heard()
        let transport = CurlTransport(configuration: CurlTransportConfiguration())
        defer { transport.shutdown() }
        let source = AccessTokenSource(transport: transport, observer: heard)
        let credentials = Credentials.metadataServer(host: "127.0.0.1:\(harness.emulator.port)")
        await #expect(throws: OAuthError.self) { try await source.token(for: credentials) }
        #expect(heard.causes.withLock { $0 } == ["http_503"])
        harness.emulator.setTokenEndpointFault(nil)
        _ = try await source.token(for: credentials)
        #expect(heard.causes.withLock { $0 }.last == "ok")
    }

    /// Without `Metadata-Flavor: Google` the metadata server refuses (403): the header is sent.
    @Test func theEmulatedMetadataServerRefusesARequestWithoutItsHeader() async throws {
        let harness = try EmulatorHarness(configure: { $0.metadataServer = true })
        defer { harness.stop() }
        let transport = CurlTransport(configuration: CurlTransportConfiguration())
        defer { transport.shutdown() }
        let url = Credentials.metadataTokenURL(host: "127.0.0.1:\(harness.emulator.port)")
        let bare = try await transport.send(HTTPRequest(url: url, headers: [], body: [], method: "GET")).get()
        #expect(bare.status == 403)
        let flavoured = try await transport.send(HTTPRequest(url: url, headers: ["Metadata-Flavor: Google"], body: [], method: "GET")).get()
        #expect(flavoured.status == 200 && String(decoding: flavoured.body, as: UTF8.self).contains("\"access_token\""))
    }
}
