import Foundation
@testable import EmulatorKit

/// An in-process emulator on a free port, stopped when the test's closure returns.
func withEmulator(_ configure: (inout EmulatorConfiguration) -> Void = { _ in },
                  _ body: (FCMEmulator) throws -> Void) throws {
    var configuration = EmulatorConfiguration()
    configuration.requireAuth = false
    configure(&configuration)
    let emulator = try FCMEmulator(configuration: configuration)
    try emulator.start()
    defer { emulator.stop() }
    try body(emulator)
}

/// POSTs `{"message": message}` to messages:send of `project`.
func send(_ emulator: FCMEmulator, project: String = "demo", message: String, validateOnly: Bool = false,
          bearer: String? = nil, http2: Bool = true) throws -> CurlResponse {
    let body = "{\"message\":\(message)\(validateOnly ? ",\"validate_only\":true" : "")}"
    return try Curl.run("POST", "\(emulator.baseURL)/v1/projects/\(project)/messages:send", body: body,
                        headers: bearer.map { ["authorization: Bearer \($0)"] } ?? [], http2: http2)
}

/// A temporary directory removed by the caller.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("emu-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The package root (for scripts/).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Dev certificates made by scripts/make-dev-cert.sh in a fresh directory: (ca, chain, key).
func makeDevCertificates() throws -> (directory: URL, ca: String, chain: String, key: String) {
    let dir = try temporaryDirectory()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = [packageRoot.appendingPathComponent("scripts/make-dev-cert.sh").path, dir.path]
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw Curl.Failure(description: "make-dev-cert.sh failed") }
    return (dir, dir.appendingPathComponent("ca.pem").path, dir.appendingPathComponent("server.pem").path,
            dir.appendingPathComponent("server-key.pem").path)
}

/// An emulator over TLS with fresh dev certificates; `body` gets the CA file to trust.
func withTLSEmulator(_ configure: (inout EmulatorConfiguration) -> Void = { _ in },
                     _ body: (FCMEmulator, String) throws -> Void) throws {
    let certs = try makeDevCertificates()
    defer { try? FileManager.default.removeItem(at: certs.directory) }
    try withEmulator({ c in
        c.tlsCertificateFile = certs.chain
        c.tlsKeyFile = certs.key
        configure(&c)
    }) { emulator in try body(emulator, certs.ca) }
}
