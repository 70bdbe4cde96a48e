import CLIKit
import ConfigurationFiles
import PushCore

/// `push-connector compose`: prints the FCM request bodies the worker would send for a job.
public struct ComposeCommand: Command {
    public static let spec = CommandSpec(
        name: "compose", synopsis: "--config APPS.json JOB.json|-",
        about: """
        Prints the FCM HTTP v1 request body the worker would send for each recipient of the job
        (or its topic / condition), as pretty JSON, one per target. Validation errors are printed
        with the field named and the exit code is 2.
        """,
        options: [.value(.config, "FILE", "App ID file", .nonEmpty)], positionals: 1...1)

    let configPath: String
    let jobPath: String

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        configPath = try arguments.required(.config, in: "compose")
        jobPath = arguments.positionals[0]
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let registry = try AppConfigurationFile.load(configPath)
        let bytes = try AppConfigurationFile.readFile(jobPath, what: "job")
        let job: SendJob
        do {
            job = try SendJob.decode(bytes)
        } catch {
            throw CommandFailure(error.issues.map { "\(jobPath): \($0)" }.joined(separator: "\n"), exitCode: 2)
        }
        guard let app = registry[job.appID] else {
            throw CommandFailure("\(jobPath): app_id: unknown App ID \"\(job.appID)\" (known: \(registry.appIDs.joined(separator: ", "))) [UNKNOWN_APP]",
                                 exitCode: 2)
        }
        let outcomes: [CompositionOutcome]
        do {
            outcomes = try MessageComposer().compose(job, app: app)
        } catch {
            throw CommandFailure(error.issues.map { "\(jobPath): \($0)" }.joined(separator: "\n"), exitCode: 2)
        }
        var failed = false
        for outcome in outcomes {
            switch outcome {
            case .message(let m):
                context.console.out((try JSONValue.parse(m.body)).encodedString(.pretty))
            case .invalid(let index, _, let issues):
                failed = true
                for issue in issues { context.console.err("\(jobPath): target \(index): \(issue)") }
            }
        }
        return failed ? 2 : 0
    }
}
