import AMQP

/// `push-connector topology declare`: declares exchanges, queues and bindings (idempotent).
public struct TopologyDeclareCommand: Command {
    public static let spec = CommandSpec(
        name: "topology declare", synopsis: "[options]",
        about: """
        Declares, idempotently, the exchanges, quorum queues and bindings of the connector: the job
        queue with at-least-once dead-lettering, one TTL queue per retry tier, the DLQ, the results
        topic exchange and queue, the events queue and its DLQ. deploy/rabbitmq-definitions.json
        holds the same topology for RabbitMQ's definitions import. Run it once (a Kubernetes Job)
        with a user allowed to configure, then run workers with --no-declare.
        """,
        options: CommonOptions.brokerOptions)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let settings = try CommonOptions.brokerSettings(arguments, context, command: "topology declare")
        let topology = try CommonOptions.topology(arguments, command: "topology declare")
        try declare(topology, settings: settings)
        context.console.out("declared \(topology.exchanges.count) exchanges, \(topology.queues.count) queues, "
            + "\(topology.bindings.count) bindings on \(settings.redactedURL) (prefix \(topology.prefix))")
        return 0
    }
}
