import EmulatorKit
import Foundation
@testable import FCM

/// A real `fcm-emulator` started in-process on 127.0.0.1 (h2c, or TLS with a throw-away
/// certificate), one service account it trusts, and an `FCMClient` pointed at it.
final class EmulatorHarness: Sendable {
    let emulator: FCMEmulator
    let account: ServiceAccount
    let client: FCMClient
    let directory: String
    static let project = "bench-project"

    struct HarnessError: Error, CustomStringConvertible { let description: String }

    init(tls: Bool = false, trustCA: Bool = true,
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
        // The token URI is only known once the port is: start on a free port first, then
        // write the account naming it (the emulator reads account files on start).
        let accountPath = directory + "/sa.json"
        configuration.serviceAccountFiles = [accountPath]
        configure(&configuration)
        let port = try Self.freePort()
        configuration.port = port
        let scheme = tls ? "https" : "http"
        let tokenURI = "\(scheme)://127.0.0.1:\(port)/token"
        let json = try ServiceAccountFactory.make(projectID: Self.project,
                                                  clientEmail: ServiceAccountFactory.defaultClientEmail(projectID: Self.project),
                                                  tokenURI: tokenURI)
        try json.write(toFile: accountPath, atomically: true, encoding: .utf8)
        account = try ServiceAccount.load(contentsOf: accountPath)
        emulator = try FCMEmulator(configuration: configuration)
        try emulator.start()
        var clientConfiguration = FCMClient.Configuration()
        clientConfiguration.baseURL = emulator.baseURL
        clientConfiguration.transport.requestTimeout = .seconds(10)
        if tls, trustCA { clientConfiguration.transport.caFile = directory + "/cert.pem" }
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
        await client.send(projectID: Self.project, messageBody: Self.body(token: token), credentials: account)
    }

    /// A port the kernel reports free right now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw HarnessError(description: "bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
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
