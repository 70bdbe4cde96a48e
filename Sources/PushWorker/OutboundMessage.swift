import AMQP
import FoundationEssentials
import PushCore

/// A message the pipeline publishes as a consequence of one delivery: a result, a retry copy
/// or a dead-letter copy. The delivery is acked only when all of them are confirmed.
public struct OutboundMessage: Sendable {
    public var exchange: String
    public var routingKey: String
    public var body: Data
    public var headers: AMQPTable
    /// What it is, for logs and counters: `result`, `retry`, `dead_letter`.
    public var kind: Kind
    /// What the counters and logs file it under: a result's outcome, a retry's tier (`30s`),
    /// a dead letter's code.
    public var label = ""
    /// A dead letter's reason in words (its `push-error-message`), or what made a retry, for the
    /// log line: the worker never reads back the headers it wrote.
    public var reason: String?

    /// The role of an outbound message.
    public enum Kind: String, Sendable { case result, retry, deadLetter = "dead_letter" }

    public var properties: MessageProperties {
        MessageProperties(contentType: "application/json", headers: headers, persistent: true)
    }

    /// A result for `exchange` (routing key `<app_id>.<outcome>`), with its App ID as the results
    /// stream's filter value (`x-stream-filter-value`, read by `StreamReader`; RabbitMQ before
    /// 3.13 keeps it as an ordinary header).
    static func result(_ result: SendResult, exchange: String) -> OutboundMessage {
        OutboundMessage(exchange: exchange, routingKey: result.routingKey, body: Data(result.encodedBytes()),
                        headers: ["x-stream-filter-value": .string(result.appID)], kind: .result, label: result.outcome.rawValue)
    }

    /// The message as the publisher takes it.
    var outgoing: ConfirmingPublisher.Outgoing {
        ConfirmingPublisher.Outgoing(exchange: exchange, routingKey: routingKey, body: body, properties: properties)
    }
}
