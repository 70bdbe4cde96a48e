import AMQP
import CLIKit

/// `push-connector topology migrate-results`: moves the results of an earlier version's quorum
/// queues into the results stream and deletes those queues (`ResultsMigration`).
public struct TopologyMigrateResultsCommand: Command {
    public static let spec = CommandSpec(
        name: "topology migrate-results", synopsis: "[options]",
        about: """
        For a broker set up by an earlier version, where <prefix>.results is bound to the quorum
        queues <prefix>.results and <prefix>.events.results: declares the topology (the stream
        <prefix>.results.stream, bound to <prefix>.results), unbinds the old queues, moves every
        result of <prefix>.results into the stream in order (confirmed before each original is
        acked), then deletes both old queues (the events copy duplicates <prefix>.results).
        Safe to run again after an interruption: the batch in flight (at most 16 results) may
        then be in the stream twice. Nothing to do on a broker without the old queues.
        """,
        options: CommonOptions.brokerOptions + CommonOptions.resultsRetentionOptions)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let settings = try CommonOptions.brokerSettings(arguments, context, command: "topology migrate-results")
        let topology = try CommonOptions.topology(arguments, command: "topology migrate-results")
        let report: ResultsMigration.Report
        do {
            report = try ResultsMigration(settings: settings, topology: topology).run { context.console.err($0) }
        } catch {
            throw CommandFailure("topology migrate-results: stopped on \(settings.redactedURL): \(error) "
                + "(nothing is lost: run it again)")
        }
        if report.deleted.isEmpty {
            context.console.out("nothing to migrate: no quorum results queue of an earlier version under prefix \(topology.prefix)")
        } else {
            let moved = report.moved.map { "\($0.value) from \($0.key)" }.joined(separator: ", ")
            context.console.out("migrated: \(moved) into \(topology.resultsStream); deleted \(report.deleted.keys.sorted().joined(separator: ", "))")
        }
        return 0
    }
}
