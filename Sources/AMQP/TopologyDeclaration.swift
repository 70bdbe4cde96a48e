/// What declaring a topology found: the broker's features (which decided the version-dependent
/// arguments) and the queues kept as an earlier version declared them.
public struct DeclarationReport: Sendable, Equatable {
    public var features: BrokerFeatures
    /// Queue name → the arguments it was declared without (`Topology.Queue.addedLater`), sorted.
    public var keptWithout: [String: [String]] = [:]

    /// Log lines for the operator: the features, then one per kept queue with what to do.
    public var notes: [String] {
        ["declared for \(features)"] + keptWithout.keys.sorted().map { queue in
            "queue \(queue) exists without \(keptWithout[queue]!.joined(separator: ", ")) (declared by an earlier version): kept as it is; "
                + "set it with a policy (docs/operations.md, \"RabbitMQ versions\")"
        }
    }
}

extension Topology {
    /// Declares every exchange, queue and binding, with the arguments the connected broker
    /// takes (`Queue.arguments(on:)`). Idempotent: declaring the same topology again changes
    /// nothing. A queue an earlier version declared without this version's `addedLater`
    /// arguments is kept as it is and reported. Throws `.channelClosed` (406
    /// PRECONDITION_FAILED) when a queue already exists with other arguments than those —
    /// RabbitMQ cannot change them in place.
    @discardableResult
    public func declare(on client: AMQPChannelClient) throws(AMQPError) -> DeclarationReport {
        let features = client.brokerFeatures
        var report = DeclarationReport(features: features)
        for exchange in exchanges {
            try client.declareExchange(exchange.name, type: exchange.type)
        }
        for queue in queues {
            do {
                try client.declareQueue(queue.name, arguments: queue.arguments(on: features))
            } catch where error.replyCode == 406 && !queue.addedLater.isEmpty {
                // Another difference than the added arguments fails again, and names it.
                try client.declareQueue(queue.name, arguments: queue.earlierArguments(on: features))
                report.keptWithout[queue.name] = queue.addedLater.sorted()
            }
        }
        for binding in bindings {
            try client.bindQueue(binding.queue, exchange: binding.exchange, routingKey: binding.routingKey)
        }
        return report
    }
}
