import AMQP
import PushCore

/// Which dead-letter queue the `dlq` commands work on: the jobs DLQ (`push-connector dlq …`) or
/// the events DLQ (`push-connector events dlq …`). The commands, the pass that reads a queue
/// without losing its order, the filters and the export format are the same for both; what
/// differs is the queue, the words of the command and where a replay sends a message.
public protocol DeadLetterQueueChoice: Sendable {
    /// The command words before the subcommand: `dlq`, `events dlq`.
    static var commandPrefix: String { get }
    /// The queue as help texts name it: `<prefix>.jobs.dlq`.
    static var queueHelp: String { get }
    /// What the queue holds, counted: `job(s)`, `message(s)`.
    static var items: String { get }
    /// Where `replay` sends a message, in words, for its help.
    static var replayHelp: String { get }
    static func queue(_ topology: Topology) -> String
    /// Where `replay` publishes a message of this queue carrying `headers`.
    static func replayDestination(_ topology: Topology, headers: AMQPTable) -> (exchange: String, routingKey: String)
    /// The destination as the replay's summary names it.
    static func replayTarget(_ topology: Topology) -> String
    /// The `push-error-code`s its messages can carry: what push-connector writes there, then
    /// the codes of RabbitMQ's own dead-lettering (`DeadLetterEntry.brokerCodes`).
    static var knownCodes: [String] { get }
}

/// `<prefix>.jobs.dlq`: jobs the worker could not send; a replay publishes them to the job exchange.
public enum JobsDeadLetters: DeadLetterQueueChoice {
    public static let commandPrefix = "dlq"
    public static let queueHelp = "<prefix>.jobs.dlq"
    public static let items = "job(s)"
    public static let replayHelp = "the job exchange <prefix>.jobs (routing key job; job.high for a push-priority: high dead letter)"
    public static func queue(_ topology: Topology) -> String { topology.deadLetterQueue }
    public static func replayDestination(_ topology: Topology, headers: AMQPTable) -> (exchange: String, routingKey: String) {
        (topology.jobsExchange, topology.jobsRoutingKey(urgent: headers[DeadLetterHeader.priority]?.stringValue == JobPriority.high.rawValue))
    }
    public static func replayTarget(_ topology: Topology) -> String { "\(topology.jobsExchange)/\(topology.jobsRoutingKey)" }
    public static let knownCodes = DeadLetterCode.allCases.map(\.rawValue) + DeadLetterEntry.brokerCodes
}

/// `<prefix>.events.dlq`: events and results the events consumer could not read or store; a
/// replay puts each back on the queue it came from (`push-source-queue`, else the events queue),
/// where the consumer reads it again.
public enum EventsDeadLetters: DeadLetterQueueChoice {
    public static let commandPrefix = "events dlq"
    public static let queueHelp = "<prefix>.events.dlq"
    public static let items = "message(s)"
    public static let replayHelp = "the queue each came from (its push-source-queue header; else <prefix>.events)"
    public static func queue(_ topology: Topology) -> String { topology.eventsDeadLetterQueue }
    public static func replayDestination(_ topology: Topology, headers: AMQPTable) -> (exchange: String, routingKey: String) {
        ("", headers[DeadLetterHeader.sourceQueue]?.stringValue ?? topology.eventsQueue)
    }
    public static func replayTarget(_ topology: Topology) -> String { "(default exchange)/<push-source-queue>" }
    public static let knownCodes = EventsDeadLetterCode.allCases.map(\.rawValue) + DeadLetterEntry.brokerCodes
}
