import CLIKit
import ConfigurationFiles
import PushCore

/// `push-connector config check`: validates an App ID file and every credentials file it names.
public struct ConfigCheckCommand: Command {
    public static let spec = CommandSpec(
        name: "config check", synopsis: "[--allow-insecure-http] APPS.json",
        about: """
        Validates the App ID configuration: required fields, message types, default payload keys,
        extra options as FCM would read them (unknown names, ttl, priority, labels, links),
        rate_limit_per_minute, and that each credentials file (relative paths: from the App ID
        file's directory) is a readable, well-formed service account whose key loads.
        Prints one line per problem (file, field, rule) and exits 2, or a summary and exits 0; an
        App ID whose project_id is not its service account's is warned about on standard error.
        (`worker --check` checks this and every other option too.)
        """,
        options: CommonOptions.fcmOptions.filter { $0.arity == .flag }, positionals: 1...1)

    let path: String
    let allowInsecureHTTP: Bool

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        path = arguments.positionals[0]
        allowInsecureHTTP = arguments.has(.allowInsecureHTTP)
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let registry = try AppConfigurationFile.load(path)
        let environment = context.environment
        let problems = AppConfigurationFile.credentialProblems(registry, path: path, allowInsecureHTTP: allowInsecureHTTP,
                                                               environment: environment)
        guard problems.isEmpty else { throw CommandFailure(problems.joined(separator: "\n"), exitCode: 2) }
        // Warnings go to standard error and do not fail the check: the setup may be deliberate.
        AppConfigurationFile.credentialWarnings(registry, path: path, allowInsecureHTTP: allowInsecureHTTP,
                                                environment: environment).forEach(context.console.err)
        context.console.out("\(path): \(registry.apps.count) App ID(s) OK: \(registry.appIDs.joined(separator: ", "))")
        AppConfigurationFile.credentialSources(registry, allowInsecureHTTP: allowInsecureHTTP, environment: environment)
            .forEach { context.console.out("  " + $0) }
        return 0
    }
}
