import Foundation
import Glibc
import Testing

/// The `fcm-emulator` executable: ready line, serving, usage errors, clean stop on SIGTERM.
@Suite(.timeLimit(.minutes(2))) struct ExecutableTests {
    /// The executable sits next to the test bundle in the build directory.
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("fcm-emulator").path
    }

    static func launch(_ arguments: [String]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return (process, output)
    }

    @Test func printsTheReadyLineServesAndStopsCleanlyOnSIGTERM() throws {
        let (process, output) = try Self.launch(["--listen", "127.0.0.1:0", "--no-auth"])
        defer { if process.isRunning { process.terminate() } }
        // Read until the ready line (bounded: the pipe closes if the process dies).
        var text = ""
        let handle = output.fileHandleForReading
        while !text.contains("\n"), case let chunk = handle.availableData, !chunk.isEmpty {
            text += String(decoding: chunk, as: UTF8.self)
        }
        let line = try #require(text.split(separator: "\n").first)
        #expect(line.hasPrefix("listening on http://127.0.0.1:"))
        let base = String(line.dropFirst("listening on ".count))
        let response = try Curl.run("POST", base + "/v1/projects/p/messages:send", body: #"{"message":{"token":"t"}}"#)
        #expect(response.status == 200)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
    }

    @Test func unknownFlagIsAOneLineErrorWithStatus2() throws {
        let (process, output) = try Self.launch(["--frobnicate"])
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 2)
        #expect(text.split(separator: "\n").count == 1)
        #expect(text.contains("--frobnicate"))
    }

    @Test func makeServiceAccountWritesAUsableFile() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("sa.json").path
        let (process, _) = try Self.launch(["make-service-account", "--project", "p", "--token-uri", "http://127.0.0.1:1/token", "--out", file])
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: String])
        #expect(json["type"] == "service_account")
        #expect(json["project_id"] == "p")
        #expect(json["token_uri"] == "http://127.0.0.1:1/token")
        #expect(json["private_key"]?.hasPrefix("-----BEGIN PRIVATE KEY-----") == true)
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
