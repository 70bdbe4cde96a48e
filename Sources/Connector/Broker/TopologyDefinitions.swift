import AMQP
import CLIKit
import PushCore

/// The topology as a RabbitMQ definitions document (the format of `rabbitmqctl
/// import_definitions` and the management plugin's `load_definitions`), so that operators who
/// manage the broker declaratively get exactly what `topology declare` would create on a broker
/// of `features` (the version-dependent arguments: `Topology.Queue.arguments(on:)`).
public enum TopologyDefinitions {
    public static func document(_ topology: Topology, vhost: String = "/", features: BrokerFeatures) -> JSONValue {
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
             "arguments": .object(q.arguments(on: features).mapValues(json))]
        }
        let bindings: [JSONValue] = topology.bindings.map { b in
            ["source": .string(b.exchange), "vhost": .string(vhost), "destination": .string(b.queue), "destination_type": "queue",
             "routing_key": .string(b.routingKey), "arguments": [:]]
        }
        // The vhost too: an import creates it when missing (the manifests use "push").
        return ["vhosts": [["name": .string(vhost)]], "exchanges": .array(exchanges), "queues": .array(queues), "bindings": .array(bindings)]
    }
}

/// `push-connector topology definitions`: prints the RabbitMQ definitions document.
public struct TopologyDefinitionsCommand: Command {
    public static let spec = CommandSpec(
        name: "topology definitions",
        synopsis: "[--prefix NAME] [--retry-tiers LIST] [--vhost VHOST] [--rabbitmq-version VERSION] [--results-max-age AGE] [--results-max-bytes N]",
        about: """
        Prints the topology as a RabbitMQ definitions JSON document, for `rabbitmqctl
        import_definitions` or the management plugin; the import creates the vhost when it is
        missing (deploy/rabbitmq-definitions.json is this output with --vhost push, the vhost
        of the deploy/ manifests). --rabbitmq-version names the broker it is for: from 4.0 the
        dead-letter queues get x-delivery-limit -1 (no limit), which RabbitMQ 3.x must not get.
        """,
        options: CommonOptions.brokerOptions.filter { $0.id == .prefix || $0.id == .retryTiers } + [
            .value(.vhost, "VHOST", "the vhost the definitions name", default: "/", .nonEmpty),
            .value(.rabbitmqVersion, "VERSION", "the RabbitMQ release the definitions are for (3.10, 4.0, 4.3.6)", default: "4.0",
                   setting: false),
        ] + CommonOptions.resultsRetentionOptions)

    let arguments: ParsedArguments
    let features: BrokerFeatures
    public init(_ arguments: ParsedArguments) throws(UsageError) {
        self.arguments = arguments
        let version = arguments[.rabbitmqVersion] ?? "4.0"
        features = BrokerFeatures(serverVersion: version)
        guard features.release != nil, version.first?.isNumber == true else {
            throw UsageError("topology definitions: --rabbitmq-version must be a release such as 3.10, 4.0 or 4.3.6, got \"\(version)\"")
        }
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let topology = try CommonOptions.topology(arguments, command: "topology definitions")
        context.console.out(TopologyDefinitions.document(topology, vhost: arguments[.vhost] ?? "/", features: features)
            .encodedString(.pretty))
        return 0
    }
}
