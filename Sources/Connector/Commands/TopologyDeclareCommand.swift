import AMQP
import CLIKit

/// `push-connector topology declare`: declares exchanges, queues and bindings (idempotent).
public struct TopologyDeclareCommand: Command {
    public static let spec = CommandSpec(
        name: "topology declare", synopsis: "[options]",
        about: """
        Declares, idempotently, the exchanges, queues and bindings of the connector: the job
        queue with at-least-once dead-lettering, one TTL queue per retry tier, the DLQ, the results
        topic exchange and its stream (with retention), the events queue and its DLQ.
        deploy/rabbitmq-definitions.json holds the same topology for RabbitMQ's definitions import.
        Run it once (a Kubernetes Job) with a user allowed to configure, then run workers with
        --no-declare. Exit code 1 when the quorum results queues of an earlier version are still
        there (everything else is declared): run `push-connector topology migrate-results`.
        """,
        options: CommonOptions.brokerOptions + CommonOptions.resultsRetentionOptions)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let settings = try CommonOptions.brokerSettings(arguments, context, command: "topology declare")
        let topology = try CommonOptions.topology(arguments, command: "topology declare")
        let (report, legacy) = try declare(topology, settings: settings)
        context.console.out("declared \(topology.exchanges.count) exchanges, \(topology.queues.count) queues, "
            + "\(topology.bindings.count) bindings on \(settings.redactedURL) (prefix \(topology.prefix)) for \(report.features)")
        for note in report.notes.dropFirst() { context.console.err("topology declare: " + note) }
        if !legacy.found.isEmpty {
            context.console.err("topology declare: " + legacy.advice(topology))
            return 1
        }
        return 0
    }
}
