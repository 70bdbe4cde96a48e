import CLIKit
import EventStorage
import FoundationEssentials
import PushCore

/// `push-connector stats`: the funnel of a job, a campaign, an App ID, or everything.
public struct StatsCommand: Command {
    public static let spec = CommandSpec(
        name: "stats", synopsis: "--db FILE|URL [--job-id J | --campaign C | --app-id A] [--json]",
        about: """
        Prints the funnel from the events database: recipients (results stored), sent, validated,
        invalid tokens, rejected, expired, dead-lettered, then received, opened, clicked, dismissed
        (distinct messages with at least one such event) and their rates against sent. Each
        recipient counts once, under its latest outcome: dead-lettered, then replayed and sent,
        counts as sent.
        """,
        options: [
            .value(.db, "FILE|URL", "the database written by `push-connector events` (SQLite file or postgres:// URL)",
                   .nonEmpty, secret: true),
            .value(.jobID, "J", "only the sends of job J", setting: false),
            .value(.campaign, "C", "only the sends of campaign C", setting: false),
            .value(.appID, "A", "only the sends of App ID A", setting: false),
            .flag(.json, "one JSON object instead of text", setting: false),
        ])

    let database: EventsDatabase
    let scope: FunnelScope
    let json: Bool

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        database = EventsDatabase(try arguments.required(.db, in: "stats"))
        var scopes: [FunnelScope] = []
        if let j = arguments[.jobID] { scopes.append(.job(j)) }
        if let c = arguments[.campaign] { scopes.append(.campaign(c)) }
        if let a = arguments[.appID] { scopes.append(.app(a)) }
        guard scopes.count <= 1 else { throw UsageError("stats: give at most one of --job-id, --campaign, --app-id") }
        scope = scopes.first ?? .all
        json = arguments.has(.json)
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        if case .sqlite(let path) = database, !FileManager.default.fileExists(atPath: path) {
            throw CommandFailure("stats: \(path): no such database", exitCode: 2)
        }
        let funnel: Funnel
        do {
            funnel = try database.funnel(scope)
        } catch {
            throw CommandFailure("stats: \(error)")
        }
        context.console.out(json ? funnel.json(scope: scope).encodedString() : funnel.text(scope: scope))
        return 0
    }
}
