import AMQP
import PushCore

/// The topology as a RabbitMQ definitions document (the format of `rabbitmqctl
/// import_definitions` and the management plugin's `load_definitions`), so that operators who
/// manage the broker declaratively get exactly what `topology declare` would create.
public enum TopologyDefinitions {
    public static func document(_ topology: Topology, vhost: String = "/") -> JSONValue {
        func json(_ value: AMQPFieldValue) -> JSONValue {
            switch value {
            case .string(let s): return .string(s)
            case .int(let i): return .int(i)
            case .bool(let b): return .bool(b)
            case .double(let d): return .double(d)
            default: return .null
            }
        }
        let exchanges: [JSONValue] = topology.exchanges.map { e in
            ["name": .string(e.name), "vhost": .string(vhost), "type": .string(e.type), "durable": true, "auto_delete": false,
             "internal": false, "arguments": [:]]
        }
        let queues: [JSONValue] = topology.queues.map { q in
            ["name": .string(q.name), "vhost": .string(vhost), "durable": true, "auto_delete": false,
             "arguments": .object(q.arguments.mapValues(json))]
        }
        let bindings: [JSONValue] = topology.bindings.map { b in
            ["source": .string(b.exchange), "vhost": .string(vhost), "destination": .string(b.queue), "destination_type": "queue",
             "routing_key": .string(b.routingKey), "arguments": [:]]
        }
        return ["exchanges": .array(exchanges), "queues": .array(queues), "bindings": .array(bindings)]
    }
}

/// `push-connector topology definitions`: prints the RabbitMQ definitions document.
public struct TopologyDefinitionsCommand: Command {
    public static let spec = CommandSpec(
        name: "topology definitions", synopsis: "[--prefix NAME] [--retry-tiers LIST] [--vhost VHOST] [--results-max-age AGE] [--results-max-bytes N]",
        about: """
        Prints the topology as a RabbitMQ definitions JSON document, for `rabbitmqctl
        import_definitions` or the management plugin (deploy/rabbitmq-definitions.json is this
        output with the defaults).
        """,
        options: CommonOptions.brokerOptions.filter { $0.name == "--prefix" || $0.name == "--retry-tiers" } + [
            .value("--vhost", "VHOST", "the vhost the definitions name", default: "/", .nonEmpty),
        ] + CommonOptions.resultsRetentionOptions)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let topology = try CommonOptions.topology(arguments, command: "topology definitions")
        context.console.out(TopologyDefinitions.document(topology, vhost: arguments.value("--vhost") ?? "/").encodedString(.pretty))
        return 0
    }
}
