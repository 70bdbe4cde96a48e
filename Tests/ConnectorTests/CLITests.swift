import AMQP
@testable import CLIKit
import EmulatorKit
import Foundation
import Synchronization
import Testing
@testable import Connector

/// Captures what a command prints.
final class CapturedConsole: Sendable {
    let lines = Mutex<(out: [String], err: [String])>(([], []))
    var console: Console {
        Console(out: { t in self.lines.withLock { $0.out.append(t) } }, err: { t in self.lines.withLock { $0.err.append(t) } })
    }
    var out: String { lines.withLock { $0.out.joined(separator: "\n") } }
    var err: String { lines.withLock { $0.err.joined(separator: "\n") } }
}

/// Runs the CLI in-process and returns (exit code, stdout, stderr).
func runCLI(_ arguments: [String], environment: [String: String] = [:]) async -> (Int32, String, String) {
    let captured = CapturedConsole()
    let code = await PushConnectorTool.main(arguments, context: CommandContext(console: captured.console, environment: environment))
    return (code, captured.out, captured.err)
}

/// The repository root (for examples/).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// A fresh temporary directory for one test.
func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "pc-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite(.timeLimit(.minutes(1))) struct CLITests {
    @Test func composePrintsOneBodyPerRecipientForTheSeedJob() async throws {
        let (code, out, err) = await runCLI(["compose", "--config", "\(repositoryRoot)/examples/apps.json",
                                             "\(repositoryRoot)/examples/jobs/notification.json"])
        #expect(code == 0, "stderr: \(err)")
        #expect(out.components(separatedBy: "\"message\": {").count - 1 == 3)
        #expect(out.contains("\"mn_message_id\": \"mnid2m.1234.12.12.1.2\""))
        #expect(out.contains("\"pushdata.name\": \"Ada\""))
        #expect(out.contains("\"analytics_label\": \"promo\""))
    }

    @Test func composeOfAnInvalidJobNamesEveryFieldAndExits2() async {
        let (code, _, err) = await runCLI(["compose", "--config", "\(repositoryRoot)/examples/apps.json",
                                           "\(repositoryRoot)/examples/jobs/invalid.json"])
        #expect(code == 2)
        #expect(err.contains("data.count"))
        #expect(err.contains("DATA_VALUE_NOT_STRING"))
    }

    @Test func composeOfAnUnknownAppSaysSo() async throws {
        let dir = try temporaryDirectory()
        let job = "\(dir)/job.json"
        try #"{"job_id":"j","app_id":"nope","topic":"news","notification":{"title":"T"}}"#.write(toFile: job, atomically: true, encoding: .utf8)
        let (code, _, err) = await runCLI(["compose", "--config", "\(repositoryRoot)/examples/apps.json", job])
        #expect(code == 2)
        #expect(err.contains("UNKNOWN_APP"))
    }

    @Test func unknownFlagGetsOneLineAndExit2() async {
        let (code, _, err) = await runCLI(["compose", "--confg", "x", "y"])
        #expect(code == 2)
        #expect(err == "push-connector compose: unknown option --confg (see --help)")
    }

    @Test func unknownCommandAndMissingArgumentsExit2() async {
        #expect(await runCLI(["frobnicate"]).0 == 2)
        #expect(await runCLI(["compose", "--config", "x"]).0 == 2)
        #expect(await runCLI([]).0 == 2)
    }

    @Test func aCommandGroupAloneListsItsSubcommands() async {
        let (code, _, err) = await runCLI(["dlq"])
        #expect(code == 2)
        #expect(err.contains("stats, list, replay"))
        let (helpCode, out, _) = await runCLI(["dlq", "--help"])
        #expect(helpCode == 0)
        #expect(out.contains("subcommands: stats"))
    }

    @Test func helpIsAvailableOnEveryCommand() async {
        for words in PushConnectorTool.commands.map(\.words) {
            let (code, out, _) = await runCLI(words + ["--help"])
            #expect(code == 0)
            #expect(out.hasPrefix("usage: push-connector"), "\(words)")
        }
    }

    @Test func configCheckNamesFileAndFieldOfEachProblem() async throws {
        let dir = try temporaryDirectory()
        let file = "\(dir)/apps.json"
        try #"{"apps":[{"app_id":"a","project_id":"shop-prod","credentials_file":"\#(dir)/missing.json","extra_options":{"android":{"ttl":"forever"}}}]}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let (code, _, err) = await runCLI(["config", "check", file])
        #expect(code == 2)
        #expect(err.contains("\(file): apps[0].extra_options.android.ttl"))
        #expect(err.contains("ANDROID_TTL"))
    }

    @Test func configCheckRefusesADottedAppIDAndABadProjectIDWithAClearMessage() async throws {
        let dir = try temporaryDirectory()
        let file = "\(dir)/apps.json"
        try #"{"apps":[{"app_id":"com.shop.android","project_id":"Shop_Prod","credentials_file":"\#(dir)/missing.json"}]}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let (code, _, err) = await runCLI(["config", "check", file])
        #expect(code == 2)
        #expect(err.contains(#"\#(file): apps[0].app_id: app_id "com.shop.android" must not contain '.'"#), "\(err)")
        #expect(err.contains("[APP_ID]"))
        #expect(err.contains(#"\#(file): apps[0].project_id: project_id "Shop_Prod" must start with a lower-case letter"#), "\(err)")
        #expect(err.contains("[PROJECT_ID]"))
    }

    @Test func plainHTTPFcmURLBeyondLoopbackIsRefusedNamingTheFlag() async throws {
        let base = ["push", "--config", "/nonexistent/apps.json", "--app-id", "a", "--token", "t"]
        let (code, _, err) = await runCLI(base + ["--fcm-url", "http://fcm.example.com"])
        #expect(code == 2)
        #expect(err.contains("--fcm-url \"http://fcm.example.com\": http:// is allowed only for a loopback host"), "\(err)")
        #expect(err.contains("--allow-insecure-http"))
        // With the flag (or on loopback) the URL passes and the next problem is the missing file.
        for extra in [["--fcm-url", "http://fcm.example.com", "--allow-insecure-http"], ["--fcm-url", "http://127.0.0.1:9"]] {
            let (otherCode, _, otherErr) = await runCLI(base + extra)
            #expect(otherCode == 2)
            #expect(!otherErr.contains("loopback") && otherErr.contains("apps.json"), "\(otherErr)")
        }
    }

    @Test func fcmTransportOtherThanNghttp2OrCurlIsRefusedNamingTheFlag() async throws {
        let base = ["push", "--config", "/nonexistent/apps.json", "--app-id", "a", "--token", "t"]
        var (code, _, err) = await runCLI(base + ["--fcm-transport", "http3"])
        #expect(code == 2)
        #expect(err.contains("--fcm-transport must be one of nghttp2, curl") && !err.contains("\n"), "\(err)")
        (code, _, err) = await runCLI(base, environment: ["PUSH_CONNECTOR_FCM_TRANSPORT": "quic"])
        #expect(code == 2)
        #expect(err.contains("PUSH_CONNECTOR_FCM_TRANSPORT (environment) must be one of nghttp2, curl"), "\(err)")
        // Both kinds pass; the next problem is the missing file.
        for kind in ["nghttp2", "curl"] {
            (code, _, err) = await runCLI(base + ["--fcm-transport", kind])
            #expect(code == 2)
            #expect(!err.contains("fcm-transport") && err.contains("apps.json"), "\(err)")
        }
    }

    @Test func configCheckRefusesAnUnreadableCredentialsFile() async throws {
        let dir = try temporaryDirectory()
        let file = "\(dir)/apps.json"
        try #"{"apps":[{"app_id":"a","project_id":"shop-prod","credentials_file":"\#(dir)/missing.json"}]}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let (code, _, err) = await runCLI(["config", "check", file])
        #expect(code == 2)
        #expect(err.contains("app a: credentials_file"))
        #expect(err.contains("missing.json"))
    }

    @Test func configCheckWarnsWhenAnAppIDsProjectIsNotItsServiceAccounts() async throws {
        let dir = try temporaryDirectory()
        let account = try ServiceAccountFactory.make(projectID: "other-project", clientEmail: "sa@other-project.iam.gserviceaccount.com",
                                                     tokenURI: "https://oauth2.googleapis.com/token")
        try account.write(toFile: "\(dir)/sa.json", atomically: true, encoding: .utf8)
        let file = "\(dir)/apps.json"
        try #"{"apps":[{"app_id":"a","project_id":"shop-prod","credentials_file":"sa.json"},"#
            .appending(#"{"app_id":"b","project_id":"other-project","credentials_file":"sa.json"}]}"#)
            .write(toFile: file, atomically: true, encoding: .utf8)
        let (code, out, err) = await runCLI(["config", "check", file])
        #expect(code == 0, "a warning does not fail the check: \(err)")
        #expect(out.contains("2 App ID(s) OK"))
        let warnings = err.split(separator: "\n")
        #expect(warnings.count == 1, "\(err)")
        #expect(warnings.first?.contains(#"app a: warning: project_id "shop-prod" is not the credentials' project_id "other-project""#) == true)
    }
}

@Suite(.timeLimit(.minutes(1))) struct DeployFileTests {
    @Test func rabbitmqDefinitionsFileMatchesTheTopology() async throws {
        let (code, out, _) = await runCLI(["topology", "definitions", "--vhost", "push"])
        #expect(code == 0)
        let file = try String(contentsOfFile: "\(repositoryRoot)/deploy/rabbitmq-definitions.json", encoding: .utf8)
        #expect(file.trimmingCharacters(in: .whitespacesAndNewlines) == out.trimmingCharacters(in: .whitespacesAndNewlines),
                "regenerate with: push-connector topology definitions --vhost push > deploy/rabbitmq-definitions.json")
    }
}

@Suite(.timeLimit(.minutes(1))) struct HeaderClampTests {
    @Test func attemptHeaderFromThePublisherIsClamped() {
        #expect(FailureHeaders.history(["push-attempt": .int(Int64.max)]).attemptsMade == 1_000_000)
        #expect(FailureHeaders.history(["push-attempt": .int(-5)]).attemptsMade == 0)
        #expect(FailureHeaders.history([:]).attemptsMade == 0)
    }
}
