import FoundationEssentials

/// What `/healthz` and `/readyz` of the events service check: the broker (the consumer is
/// consuming; the publisher holds or can open a connection) and the database (it opens and
/// answers a query; the latest transaction did not fail).
struct EventsHealth: Sendable {
    let publisher: EventPublisher?
    let consumer: EventsConsumer?
    let writer: BatchWriter?
    let database: DatabaseProbe?

    /// nil when healthy, else the first problem found.
    func problem() async -> String? {
        if let consumer, !consumer.isConsuming.load(ordering: .relaxed) {
            return "broker: the events consumer is not consuming (broker unreachable or reconnecting)"
        }
        if let publisher, await !publisher.brokerReachable() { return "broker: unreachable" }
        if let database {
            if let problem = database.problem() { return "database: \(problem)" }
            if writer?.lastTransactionFailed.load(ordering: .relaxed) == true { return "database: the latest transaction failed" }
        }
        return nil
    }
}
