import AMQP
import FoundationEssentials

/// The quorum results queues an earlier version declared (`<prefix>.results`,
/// `<prefix>.events.results`), found on the broker by a passive declare. While one exists and
/// is still bound, every result is also written there and it grows without limit: `topology
/// declare` refuses to call that done, and the worker and events consumer log it at every start.
public struct LegacyResultsQueues: Sendable {
    /// Each queue found and the messages ready in it.
    public var found: [(name: String, messages: Int)]

    /// Looks for the legacy queues of `topology` (a missing queue is a 404 the client survives).
    public static func find(_ topology: Topology, client: AMQPChannelClient) throws(AMQPError) -> LegacyResultsQueues {
        var found: [(name: String, messages: Int)] = []
        for name in topology.legacyResultsQueues {
            do {
                found.append((name, Int(try client.messageCount(queue: name))))
            } catch where error.code == .channelClosed && error.replyCode == 404 {
                continue
            }
        }
        return LegacyResultsQueues(found: found)
    }

    /// What to do, in one line (empty when nothing was found).
    public func advice(_ topology: Topology) -> String {
        guard !found.isEmpty else { return "" }
        let list = found.map { "\($0.name) (\($0.messages) message(s))" }.joined(separator: ", ")
        return "found the quorum results queue(s) \(list) of an earlier version: results still go there too and they grow "
            + "without limit; run `push-connector topology migrate-results --prefix \(topology.prefix)` to move what they hold "
            + "into the stream \(topology.resultsStream) and delete them (docs/operations.md, \"Results stream\")"
    }
}
