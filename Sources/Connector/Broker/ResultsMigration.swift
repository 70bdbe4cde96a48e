import AMQP
import FoundationEssentials

/// Moves the results an earlier version left in its quorum queues (`<prefix>.results`, and
/// `<prefix>.events.results`) into the results stream, then deletes those queues.
///
/// Steps, each safe to run again after a crash at any point:
/// 1. declare the topology: the stream is bound `#` to the results exchange, so from here on
///    every new result reaches it;
/// 2. unbind the old queues from the results exchange: no new result goes there;
/// 3. move every message of `<prefix>.results` (or, when only the events copy is left, of
///    `<prefix>.events.results`) into the stream, in order: basic.get batches of `batchSize`,
///    each copy published with its properties and routing key through a temporary exchange
///    bound only to the stream (mandatory, confirmed), then the originals acked (`multiple`).
///    Never a requeue; killed in the middle, the broker returns the unacked originals, and the
///    batch in flight (at most `batchSize`) may be in the stream twice;
/// 4. delete the emptied queue, and then `<prefix>.events.results`: it holds copies of the
///    same results (both were bound `#`), so they are in the stream already.
///
/// Results published while it runs land in the stream before the moved ones.
struct ResultsMigration {
    /// Messages per batch: RabbitMQ 3.10 loses basic.get acks beyond ~32 unsettled on a
    /// quorum queue's channel when it closes (the same limit as `DeadLetterQueuePass`).
    static let batchSize = 16

    let settings: AMQPSettings
    let topology: Topology

    /// What a run did.
    struct Report: Equatable {
        var moved: [String: Int] = [:]
        var deleted: [String: Int] = [:]
    }

    func run(progress: (String) -> Void) throws -> Report {
        var report = Report()
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try topology.declare(on: client)
        let legacy = try LegacyResultsQueues.find(topology, client: client)
        guard !legacy.found.isEmpty else { return report }
        for queue in legacy.found {
            try client.unbindQueue(queue.name, exchange: topology.resultsExchange, routingKey: "#")
            progress("unbound \(queue.name) from \(topology.resultsExchange)")
        }
        // The events copy duplicates the main queue: move only one of them, the main one if left.
        let source = legacy.found[0].name
        report.moved[source] = try move(source, client: client, progress: progress)
        for queue in legacy.found {
            report.deleted[queue.name] = Int(try client.deleteQueue(queue.name))
            progress("deleted \(queue.name)" + (queue.name == source ? "" : " (its \(report.deleted[queue.name]!) message(s) duplicate \(source))"))
        }
        return report
    }

    /// Moves every message of `queue` into the stream; returns how many.
    private func move(_ queue: String, client: AMQPChannelClient, progress: (String) -> Void) throws -> Int {
        let exchange = "\(topology.resultsStream).migrate"
        try client.declareExchange(exchange, type: "topic", durable: false)
        try client.bindQueue(topology.resultsStream, exchange: exchange, routingKey: "#")
        let publisher = try AMQPChannelClient(settings: settings)
        defer { publisher.close() }
        var moved = 0
        while true {
            var batch: [Delivery] = []
            while batch.count < Self.batchSize, let delivery = try client.get(queue: queue) { batch.append(delivery) }
            guard let last = batch.last else { break }
            // Consecutive copies with the same routing key go in one confirmed publish run.
            var start = 0
            while start < batch.count {
                var end = start + 1
                while end < batch.count && batch[end].routingKey == batch[start].routingKey { end += 1 }
                try publisher.publishCopiesConfirmed(Array(batch[start..<end]), exchange: exchange, routingKey: batch[start].routingKey)
                start = end
            }
            try client.ack(last.deliveryTag, multiple: true)
            moved += batch.count
            if moved % 1024 < Self.batchSize { progress("moved \(moved) result(s) from \(queue)") }
        }
        try client.deleteExchange(exchange)
        progress("moved \(moved) result(s) from \(queue) into \(topology.resultsStream)")
        return moved
    }
}
