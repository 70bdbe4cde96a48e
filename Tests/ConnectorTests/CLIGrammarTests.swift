@testable import CLIKit
import Foundation
@testable import ServiceRuntime
import Testing
@testable import Connector

/// The command line as an integrator meets it (issue 31): a version, typos in variables refused
/// as typos in the settings file are, a warning for a password in argv, and `--code` values
/// that can match nothing refused, even under `--check`.
@Suite(.timeLimit(.minutes(1))) struct CLIGrammarTests {
    @Test func versionIsPrintedByTheFlagAndTheCommand() async {
        for arguments in [["--version"], ["version"]] {
            let (code, out, _) = await runCLI(arguments)
            #expect(code == 0 && out.trimmingCharacters(in: .newlines) == "push-connector \(BuildInfo.version)", "\(arguments): \(out)")
        }
        #expect(await runCLI(["--help"]).1.contains("--version"))
    }

    @Test func aMisspelledVariableIsRefusedNamingTheOneMeant() async {
        let (code, _, err) = await runCLI(["topology", "declare", "--check"], environment: ["PUSH_CONNECTOR_PREFIKS": "x"])
        #expect(code == 2 && err.contains("PUSH_CONNECTOR_PREFIKS (environment) is not a push-connector setting (did you mean PUSH_CONNECTOR_PREFIX?)"),
                "\(err)")
        #expect(!err.contains("x\""), "the value is not echoed")
    }

    /// One environment serves several commands: a variable of another command, the password
    /// variables and the image's health URL are not typos.
    @Test func variablesOfOtherCommandsAndThePasswordVariablesAreAccepted() async {
        let environment = ["PUSH_CONNECTOR_LANES": "2", "PUSH_CONNECTOR_AMQP_PASSWORD": "pw", "PUSH_CONNECTOR_HEALTH_URL": "http://x/readyz",
                           "PUSH_CONNECTOR_DB": "/tmp/x.db"]
        let (code, _, err) = await runCLI(["topology", "declare", "--check"], environment: environment)
        #expect(code == 0, "\(err)")
    }

    @Test func aPasswordInTheURLOnTheCommandLineIsWarnedAboutWithoutShowingIt() async {
        var (code, _, err) = await runCLI(["topology", "declare", "--amqp-url", "amqp://push:s3cret@broker:5672/push", "--check"])
        #expect(code == 0 && err.contains("warning: --amqp-url carries a password on the command line") && !err.contains("s3cret"), "\(err)")
        (code, _, err) = await runCLI(["topology", "declare", "--check"],
                                      environment: ["PUSH_CONNECTOR_AMQP_URL": "amqp://push:s3cret@broker:5672/push"])
        #expect(code == 0 && !err.contains("warning"), "from the environment argv shows nothing: \(err)")
        (code, _, err) = await runCLI(["topology", "declare", "--amqp-url", "amqp://push@broker:5672/push", "--check"],
                                      environment: ["PUSH_CONNECTOR_AMQP_PASSWORD": "s3cret"])
        #expect(code == 0 && !err.contains("warning"), "\(err)")
    }

    @Test func aCodeNoMessageOfTheQueueCarriesIsRefusedEvenUnderCheck() async {
        var (code, _, err) = await runCLI(["dlq", "replay", "--code", "QUOTA_EXCEEDED", "--dry-run", "--check"])
        #expect(code == 2 && err.contains("--code must be a code of this queue") && err.contains("RETRIES_EXHAUSTED"), "\(err)")
        (code, _, err) = await runCLI(["events", "dlq", "list", "--code", "UNKNOWN_APP", "--check"])
        #expect(code == 2 && err.contains("STORE_FAILED"), "the events DLQ has its own codes: \(err)")
        (code, _, err) = await runCLI(["events", "dlq", "list", "--code", "STORE_FAILED", "--check"])
        #expect(code == 0, "\(err)")
    }

    /// One duration grammar for every option that takes a time: units, sums, bare seconds.
    @Test func everyDurationOptionTakesOneGrammar() async throws {
        let folder = try AppFolder()
        #expect(DurationText.seconds("90s") == 90 && DurationText.seconds("15m") == 900 && DurationText.seconds("36h") == 129_600)
        #expect(DurationText.seconds("7d") == 604_800 && DurationText.seconds("7D") == 604_800 && DurationText.seconds("1h30m") == 5_400)
        #expect(DurationText.seconds("30") == 30, "bare seconds, as before")
        for bad in ["", "2M", "1.5h", "h", "-5", "5x", "99999999999999999999d"] { #expect(DurationText.seconds(bad) == nil, "\(bad)") }
        #expect(DurationText.maxAge("7d") == "7D" && DurationText.maxAge("36h") == "36h" && DurationText.maxAge("1M") == "1M")

        var (code, out, err) = await runCLI(["worker", "--config", folder.appsFile, "--shutdown-deadline", "2m",
                                             "--max-age", "36h", "--retry-base-delay", "5", "--heartbeat", "15s", "--check"])
        #expect(code == 0 && out.contains("2m") && out.contains("36h"), "\(out) \(err)")
        (code, _, err) = await runCLI(["worker", "--config", folder.appsFile, "--shutdown-deadline", "2M", "--check"])
        #expect(code == 2 && err.contains("--shutdown-deadline must be a duration such as 90s, 15m, 2h or 7d"), "\(err)")
        (code, _, err) = await runCLI(["dlq", "list", "--older-than", "7D", "--check"])
        #expect(code == 0, "7D, the results retention's spelling, works for the DLQ filters too: \(err)")
        (code, out, _) = await runCLI(["topology", "definitions", "--results-max-age", "7d"])
        #expect(code == 0 && out.contains(#""x-max-age" : "7D""#) || out.contains(#""x-max-age": "7D""#), "the same stream argument as before")
    }

    /// Durations below a second take the same grammar: `50ms`, `1s500ms`; a bare number stays seconds.
    @Test func millisecondsTakeTheSameGrammar() {
        #expect(DurationText.milliseconds("50ms") == 50 && DurationText.milliseconds("1s500ms") == 1_500)
        #expect(DurationText.milliseconds("2") == 2_000 && DurationText.milliseconds("1m") == 60_000, "m is minutes, ms milliseconds")
        #expect(DurationText.seconds("1500ms") == nil && DurationText.seconds("2000ms") == 2, "seconds options take whole seconds")
        for bad in ["ms", "5M", "5mss", "1.5s", "5 ms"] { #expect(DurationText.milliseconds(bad) == nil, "\(bad)") }
    }

    /// Units live in values, not names (issue 31): `--request-deadline-s` and `--batch-delay-ms`
    /// were renamed; the old names are still read from every source, translated, with a warning.
    @Test func aRenamedOptionIsStillReadUnderItsFormerNameWithAWarning() async throws {
        let spec = EventsCommand.spec
        var parsed = try ParsedArguments(["--batch-delay-ms", "20", "--request-deadline-s", "45"], spec: spec, environment: [:])
        #expect(parsed[.batchDelay] == "20ms" && parsed.requiredMilliseconds(.batchDelay) == 20)
        #expect(parsed.requiredSeconds(.requestDeadline) == 45)
        #expect(parsed.deprecations == ["--batch-delay-ms is deprecated and will be removed: use --batch-delay (20 reads as 20ms)",
                                        "--request-deadline-s is deprecated and will be removed: use --request-deadline"], "\(parsed.deprecations)")
        parsed = try ParsedArguments([], spec: spec, environment: ["PUSH_CONNECTOR_BATCH_DELAY_MS": "7"])
        #expect(parsed.requiredMilliseconds(.batchDelay) == 7 && parsed.deprecations.first?.hasPrefix("PUSH_CONNECTOR_BATCH_DELAY_MS (environment) is deprecated") == true)
        let folder = try temporaryDirectory()
        let settings = folder + "/settings.json"
        try #"{"batch_delay_ms": 9}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        parsed = try ParsedArguments(["--settings", settings], spec: spec, environment: [:], knownKeys: PushConnectorTool.settingKeys)
        #expect(parsed.requiredMilliseconds(.batchDelay) == 9 && parsed.deprecations.first?.contains("batch_delay_ms is deprecated") == true)
        parsed = try ParsedArguments(["--batch-delay", "5ms"], spec: spec, environment: ["PUSH_CONNECTOR_BATCH_DELAY_MS": "7"])
        #expect(parsed.requiredMilliseconds(.batchDelay) == 5 && parsed.deprecations.isEmpty, "the new name wins, nothing to warn of")
        #expect(parsed.requiredMilliseconds(.batchDelay) == 5)

        var (code, _, err) = await runCLI(["events", "--no-consume", "--http", "127.0.0.1:0", "--batch-delay-ms", "20", "--check"])
        #expect(code == 0 && err.contains("push-connector events: warning: --batch-delay-ms is deprecated"), "\(err)")
        (code, _, err) = await runCLI(["events", "--no-consume", "--http", "127.0.0.1:0", "--batch-delay", "5ms", "--batch-delay-ms", "5", "--check"])
        #expect(code == 2 && err.contains("--batch-delay given twice"), "\(err)")
        (code, _, err) = await runCLI(["events", "--no-consume", "--http", "127.0.0.1:0", "--batch-delay", "50", "--check"])
        #expect(code == 2 && err.contains("--batch-delay must be a duration such as 50ms"), "a bare number is seconds, as everywhere: \(err)")
        let help = await runCLI(["events", "--help"]).1
        #expect(help.contains("formerly --batch-delay-ms, still read"), "\(help)")
    }

    /// A command lists only the options it uses: nothing of the DLQ, cancel, pause, send or
    /// results commands reads retry tiers. A script that still passes `--retry-tiers` to them
    /// (one set of broker arguments for every command) keeps working, with a warning.
    @Test func commandsThatUseNoRetryTierDoNotTakeRetryTiers() async {
        let commands = [["dlq", "stats"], ["dlq", "list"], ["dlq", "replay"], ["dlq", "export", "out.jsonl"], ["dlq", "import", "in.jsonl"],
                        ["dlq", "purge"], ["events", "dlq", "list"], ["events", "dlq", "replay"], ["cancel", "--campaign", "c"],
                        ["pause", "--app-id", "a"], ["send", "job.json"], ["results"]]
        for words in commands {
            let (code, _, err) = await runCLI(words + ["--retry-tiers", "5", "--check"])
            #expect(code == 0 && err.contains(": warning: --retry-tiers is ignored here"), "\(words): \(err)")
            let (missing, _, complaint) = await runCLI(words + ["--check", "--retry-tiers"])
            #expect(missing == 2 && complaint.contains("--retry-tiers needs a value"), "\(words): \(complaint)")
            let help = await runCLI(words + ["--help"]).1
            #expect(!help.contains("--retry-tiers"), "\(words)")
        }
        let (workerHelp, declareHelp) = (await runCLI(["worker", "--help"]).1, await runCLI(["topology", "declare", "--help"]).1)
        #expect(workerHelp.contains("--retry-tiers") && declareHelp.contains("--retry-tiers"))
        let (code, _, err) = await runCLI(["worker", "--retry-tiers", "0", "--check"])
        #expect(code == 2 && err.contains("--retry-tiers must be whole seconds"), "the worker still reads and checks it: \(err)")
    }
}
