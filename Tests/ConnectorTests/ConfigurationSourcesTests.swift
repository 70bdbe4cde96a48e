@testable import CLIKit
import EmulatorKit
import Foundation
import Testing
@testable import Connector
import PushWorker

/// Runs the built `push-connector` with exactly `environment` (plus PATH) from `directory`;
/// returns (exit code, stdout, stderr).
func runBinary(_ arguments: [String], environment: [String: String] = [:], directory: String = "/") throws -> (Int32, String, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
    process.arguments = arguments
    process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { mine, _ in mine }
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

/// A folder with an App ID file naming its service account by a relative path (`sa.json`).
struct AppFolder {
    let directory: String
    let appsFile: String

    init(apps: String? = nil) throws {
        directory = try temporaryDirectory()
        appsFile = directory + "/apps.json"
        let account = try ServiceAccountFactory.make(projectID: "shop-prod",
                                                     clientEmail: ServiceAccountFactory.defaultClientEmail(projectID: "shop-prod"),
                                                     tokenURI: "https://oauth2.googleapis.com/token")
        try account.write(toFile: directory + "/sa.json", atomically: true, encoding: .utf8)
        try (apps ?? #"{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"sa.json","rate_limit_per_minute":6000}]}"#)
            .write(toFile: appsFile, atomically: true, encoding: .utf8)
    }

    func write(_ name: String, _ text: String) throws -> String {
        try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        return directory + "/" + name
    }
}

/// The option sources: command line > environment > settings file > default; errors name the
/// variable or the file and key; `--check` validates all of it without connecting.
@Suite(.timeLimit(.minutes(1))) struct ConfigurationSourcesTests {
    @Test func eachSourceIsUsedInPrecedenceOrderFlagEnvironmentFileDefault() throws {
        let folder = try AppFolder()
        let settings = try folder.write("settings.json", #"{"lanes": 4, "prefetch": 9, "max_attempts": 5, "no_declare": true}"#)
        let environment = ["PUSH_CONNECTOR_LANES": "3", "PUSH_CONNECTOR_PREFETCH": "7", "PUSH_CONNECTOR_SETTINGS": settings]
        let a = try ParsedArguments(["--config", folder.appsFile, "--lanes", "2"], spec: WorkerCommand.spec, environment: environment)
        #expect(a[.lanes] == "2")            // flag over environment and file
        #expect(a.source(of: .lanes) == .commandLine)
        #expect(a[.prefetch] == "7")         // environment over file
        #expect(a.source(of: .prefetch) == .environment)
        #expect(a[.maxAttempts] == "5")     // file over default
        #expect(a.source(of: .maxAttempts) == .settingsFile)
        #expect(a.has(.noDeclare))                // a flag from the file
        #expect(a[.retryBaseDelay] == "5s") // the documented default
        #expect(a.source(of: .retryBaseDelay) == .defaultValue)
        // An environment "false" beats the file's true.
        let off = try ParsedArguments(["--config", folder.appsFile], spec: WorkerCommand.spec,
                                      environment: environment.merging(["PUSH_CONNECTOR_NO_DECLARE": "false"]) { $1 })
        #expect(!off.has(.noDeclare))
    }

    @Test func workerCheckPrintsEveryValueWithItsSourceAndRedactsThePassword() throws {
        let folder = try AppFolder()
        let settings = try folder.write("settings.json", #"{"lanes": 4, "prefetch": 9, "max_attempts": 5, "amqp_url": "amqp://app:s3cret-pw@broker.invalid:5672/push"}"#)
        // Nothing listens on broker.invalid: --check must not try.
        let (code, out, err) = try runBinary(["worker", "--check", "--config", folder.appsFile, "--lanes", "2"],
                                             environment: ["PUSH_CONNECTOR_LANES": "3", "PUSH_CONNECTOR_PREFETCH": "7",
                                                           "PUSH_CONNECTOR_SETTINGS": settings])
        #expect(code == 0, "\(err)")
        func line(_ option: String) -> String { out.split(separator: "\n").first { $0.hasPrefix("  \(option) ") }.map(String.init) ?? "" }
        #expect(line("--lanes").contains("2") && line("--lanes").hasSuffix("(command line)"), "\(out)")
        #expect(line("--prefetch").contains("7") && line("--prefetch").hasSuffix("(environment)"), "\(out)")
        #expect(line("--max-attempts").contains("5") && line("--max-attempts").hasSuffix("(settings file)"), "\(out)")
        #expect(line("--retry-base-delay").hasSuffix("(default)"), "\(out)")
        #expect(line("--amqp-url").contains("amqp://app:***@broker.invalid:5672/push"), "\(out)")
        #expect(!out.contains("s3cret") && !err.contains("s3cret"))
        // The relative credentials_file was found beside the App ID file, not in the working directory "/".
        #expect(out.contains("credentials \(folder.directory)/sa.json (key loads), tokens from service account "), "\(out)")
        #expect(out.contains("rate 6000/min"), "\(out)")
    }

    /// `--lanes auto` (the default) runs one lane per processor the process may use: all of
    /// this machine's (at most 8), one under `taskset -c 0`. A count out of range is refused.
    @Test func theDefaultLanesFollowTheProcessorsTheProcessMayUse() throws {
        let folder = try AppFolder()
        func lanes(_ out: String) -> String? {
            out.split(separator: "\n").first { $0.contains(" lane(s) with prefetch") }
                .flatMap { $0.split(separator: " ").drop { $0 != "on" }.dropFirst().first.map(String.init) }
        }
        let (code, out, err) = try runBinary(["worker", "--check", "--config", folder.appsFile])
        #expect(code == 0, "\(err)")
        let expected = min(ProcessInfo.processInfo.activeProcessorCount, SendWorker.mostAutomaticLanes)
        #expect(lanes(out) == "\(expected)", "\(out)")
        #expect(out.split(separator: "\n").contains { $0.hasPrefix("  --lanes ") && $0.contains("auto") && $0.hasSuffix("(default)") }, "\(out)")

        let pinned = Process()
        pinned.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        pinned.arguments = ["-c", "0", try builtProduct("push-connector"), "worker", "--check", "--config", folder.appsFile]
        let pipe = Pipe()
        pinned.standardOutput = pipe
        try pinned.run()
        let pinnedOut = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        pinned.waitUntilExit()
        #expect(pinned.terminationStatus == 0 && lanes(pinnedOut) == "1", "\(pinnedOut)")

        for bad in ["0", "65", "many"] {
            let (code, _, err) = try runBinary(["worker", "--check", "--config", folder.appsFile, "--lanes", bad])
            #expect(code != 0 && err.contains("--lanes must be auto or a whole number from 1 to 64"), "\(bad): \(err)")
        }
    }

    @Test func settingsFileMistakesAreRefusedNamingTheFileAndTheKey() async throws {
        let folder = try AppFolder()
        func check(_ settings: String, environment: [String: String] = [:]) async throws -> (Int32, String) {
            let path = try folder.write("settings.json", settings)
            let (code, _, err) = await runCLI(["worker", "--check", "--config", folder.appsFile, "--settings", path], environment: environment)
            return (code, err)
        }
        let path = folder.directory + "/settings.json"
        var (code, err) = try await check(#"{"prefech": 100}"#)
        #expect(code == 2)
        #expect(err.contains("\(path): prefech: is not a push-connector setting"), "\(err)")
        (code, err) = try await check(#"{"prefetch": "many"}"#)
        #expect(code == 2)
        #expect(err.contains("\(path): prefetch must be a whole number from 1 to 65535, got \"many\""), "\(err)")
        (code, err) = try await check(#"{"no_declare": "yes"}"#)
        #expect(code == 2)
        #expect(err.contains("\(path): no_declare must be true or false"), "\(err)")
        (code, err) = try await check(#"{"amqp_url": "http://app:hunter2@broker"}"#)
        #expect(code == 2)
        #expect(err.contains("\(path): amqp_url must be an amqp:// or amqps:// URL") && !err.contains("hunter2"), "\(err)")
        (code, err) = try await check("[1]")
        #expect(code == 2)
        #expect(err.contains("\(path): settings file must be a JSON object"), "\(err)")
        // A bad variable is named too.
        (code, err) = try await check("{}", environment: ["PUSH_CONNECTOR_LANES": "zero"])
        #expect(code == 2)
        #expect(err.contains("PUSH_CONNECTOR_LANES (environment) must be auto or a whole number from 1 to 64, got \"zero\""), "\(err)")
        // Another command's key (events' db) is accepted and ignored, so one file can serve both.
        (code, err) = try await check(#"{"db": "/var/lib/push/events.db"}"#)
        #expect(code == 0, "\(err)")
    }

    @Test func checkRefusesABadAppIDFileWithExit2AndAcceptsAGoodOne() throws {
        let good = try AppFolder()
        var (code, out, err) = try runBinary(["worker", "--check", "--config", good.appsFile])
        #expect(code == 0, "\(err)")
        #expect(out.contains("worker: configuration OK"))

        let badField = try AppFolder(apps: #"{"apps":[{"app_id":"shop-android","project_id":"Shop_Prod","credentials_file":"sa.json"}]}"#)
        (code, _, err) = try runBinary(["worker", "--check", "--config", badField.appsFile])
        #expect(code == 2)
        #expect(err.contains("\(badField.appsFile): apps[0].project_id"), "\(err)")

        let badRate = try AppFolder(apps: #"{"apps":[{"app_id":"a","project_id":"shop-prod","credentials_file":"sa.json","rate_limit_per_minute":0}]}"#)
        (code, _, err) = try runBinary(["worker", "--check", "--config", badRate.appsFile])
        #expect(code == 2)
        #expect(err.contains("\(badRate.appsFile): apps[0].rate_limit_per_minute"), "\(err)")

        let missingKey = try AppFolder(apps: #"{"apps":[{"app_id":"a","project_id":"shop-prod","credentials_file":"nope.json"}]}"#)
        (code, _, err) = try runBinary(["worker", "--check", "--config", missingKey.appsFile])
        #expect(code == 2)
        #expect(err.contains("\(missingKey.appsFile): app a: credentials_file") && err.contains("\(missingKey.directory)/nope.json"), "\(err)")

        let notCA = try good.write("ca.pem", "not a certificate")
        (code, _, err) = try runBinary(["worker", "--check", "--config", good.appsFile, "--ca-file", notCA])
        #expect(code == 2)
        #expect(err.contains("--ca-file \(notCA): no PEM certificate in it"), "\(err)")
    }

    @Test func eventsCheckValidatesWithoutConnecting() throws {
        let folder = try AppFolder()
        var (code, out, err) = try runBinary(["events", "--check", "--http", "127.0.0.1:8088", "--db", folder.directory + "/events.db",
                                              "--config", folder.appsFile],
                                             environment: ["PUSH_CONNECTOR_AMQP_URL": "amqp://u:pw-9@broker.invalid/"])
        #expect(code == 0, "\(err)")
        #expect(out.contains("events: configuration OK") && out.contains("amqp://u:***@broker.invalid/") && !out.contains("pw-9"), "\(out)")
        (code, _, err) = try runBinary(["events", "--check", "--http", "127.0.0.1:8088", "--db", "/nonexistent-dir/events.db"])
        #expect(code == 2)
        #expect(err.contains("--db /nonexistent-dir/events.db: directory /nonexistent-dir does not exist or is not writable"), "\(err)")
        (code, _, err) = try runBinary(["events", "--check", "--http", "nowhere", "--db", folder.directory + "/events.db"])
        #expect(code == 2)
        #expect(err.contains("--http must be HOST:PORT"), "\(err)")
    }
}
