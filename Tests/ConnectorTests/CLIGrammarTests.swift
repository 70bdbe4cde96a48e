import Foundation
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
}
