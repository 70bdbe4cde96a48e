import EmulatorKit
import Foundation
@testable import FCM

/// A real `fcm-emulator` started in-process on 127.0.0.1 (h2c, or TLS with a throw-away
/// certificate), one service account it trusts, and an `FCMClient` pointed at it (sending
/// through `transport`, libnghttp2 by default).
final class EmulatorHarness: Sendable {
    let emulator: FCMEmulator
    let account: ServiceAccount
    let client: FCMClient
    let directory: String
    static let project = "bench-project"

    struct HarnessError: Error, CustomStringConvertible { let description: String }

    init(tls: Bool = false, trustCA: Bool = true, transport: FCMTransportKind = .nghttp2,
         configure: (inout EmulatorConfiguration) -> Void = { _ in },
         configureClient: (inout FCMClient.Configuration) -> Void = { _ in }) throws {
        directory = NSTemporaryDirectory() + "fcm-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var configuration = EmulatorConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.requireAuth = true
        if tls {
            try Self.makeCertificate(in: directory)
            configuration.tlsCertificateFile = directory + "/cert.pem"
            configuration.tlsKeyFile = directory + "/key.pem"
        }
        // The emulator binds port 0 (no window in which another process could take the port);
        // the account naming its token URI is written and trusted once the port is known.
        let accountPath = directory + "/sa.json"
        configure(&configuration)
        let emulator = try FCMEmulator(configuration: configuration)
        try emulator.start()
        self.emulator = emulator
        let json = try ServiceAccountFactory.make(projectID: Self.project,
                                                  clientEmail: ServiceAccountFactory.defaultClientEmail(projectID: Self.project),
                                                  tokenURI: emulator.tokenURL)
        try json.write(toFile: accountPath, atomically: true, encoding: .utf8)
        try emulator.trustServiceAccount(json: json)
        account = try ServiceAccount.load(contentsOf: accountPath)
        var clientConfiguration = FCMClient.Configuration()
        clientConfiguration.baseURL = emulator.baseURL
        clientConfiguration.transport.requestTimeout = .seconds(10)
        if tls, trustCA { clientConfiguration.transport.caFile = directory + "/cert.pem" }
        clientConfiguration.transportKind = transport
        configureClient(&clientConfiguration)
        client = FCMClient(configuration: clientConfiguration)
    }

    func stop() {
        client.shutdown()
        emulator.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A valid send request body for `token`.
    static func body(token: String, validateOnly: Bool = false) -> [UInt8] {
        Array(#"{"message":{"token":"\#(token)","notification":{"title":"Hi","body":"there"}},"validate_only":\#(validateOnly)}"#.utf8)
    }

    func send(token: String) async -> FCMOutcome {
        await client.send(projectID: Self.project, messageBody: Self.body(token: token), credentials: .serviceAccount(account))
    }

    /// `send` through the client's callback entry (`FCMClient.start`).
    func start(token: String) async -> FCMOutcome {
        await withCheckedContinuation { continuation in
            client.start(projectID: Self.project, messageBody: Self.body(token: token), credentials: .serviceAccount(account)) {
                continuation.resume(returning: $0)
            }
        }
    }

    /// The client's two ways in, for tests that pin the same rules through both.
    enum Entry: CaseIterable, Sendable { case send, start }

    func send(token: String, via entry: Entry) async -> FCMOutcome {
        switch entry {
        case .send: await send(token: token)
        case .start: await start(token: token)
        }
    }

    /// A self-signed certificate for 127.0.0.1 (its own CA), made with the openssl CLI.
    static func makeCertificate(in directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                             "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem",
                             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                             "-addext", "basicConstraints=critical,CA:TRUE"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw HarnessError(description: "openssl req failed") }
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}
