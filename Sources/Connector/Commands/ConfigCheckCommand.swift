import FCM
import PushCore

/// `push-connector config check`: validates an App ID file and every credentials file it names.
public struct ConfigCheckCommand: Command {
    public static let spec = CommandSpec(
        name: "config check", flags: CommonOptions.fcmFlags, positionals: 1...1,
        usage: """
        usage: push-connector config check [--allow-insecure-http] APPS.json

        Validates the App ID configuration: required fields, message types, default payload keys,
        extra options as FCM would read them (unknown names, ttl, priority, labels, links), and
        that each credentials file is a readable, well-formed service account whose key loads.
        Prints one line per problem (file, field, rule) and exits 2, or a summary and exits 0.
        """)

    let path: String
    let allowInsecureHTTP: Bool

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        path = arguments.positionals[0]
        allowInsecureHTTP = arguments.has("--allow-insecure-http")
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let registry = try AppConfigurationFile.load(path)
        var problems: [String] = []
        for appID in registry.appIDs {
            let app = registry[appID]!
            do {
                let account = try ServiceAccount.load(contentsOf: app.credentialsFile, allowInsecureHTTP: allowInsecureHTTP)
                _ = try RSASigner(pem: account.privateKey)
            } catch {
                problems.append("\(path): app \(appID): credentials_file: \(error)")
            }
        }
        guard problems.isEmpty else { throw CommandFailure(problems.joined(separator: "\n"), exitCode: 2) }
        context.console.out("\(path): \(registry.apps.count) App ID(s) OK: \(registry.appIDs.joined(separator: ", "))")
        return 0
    }
}
