import FoundationEssentials

/// Where a consumer of a RabbitMQ stream starts: the `x-stream-offset` argument of
/// basic.consume (AMQP 0-9-1 on RabbitMQ 3.9 and later).
public enum StreamOffset: Sendable, Equatable {
    /// The oldest message the stream still holds (after retention).
    case first
    /// The last chunk written: the most recent messages, then what comes.
    case last
    /// Only what is written after the consumer starts.
    case next
    /// The message at this offset (or the first one kept, when retention removed it).
    case offset(Int64)
    /// The first chunk written at or after this instant (AMQP timestamp: whole seconds).
    case timestamp(Date)

    /// The consumer argument to pass to `AMQPConsumer.start(arguments:)`.
    public var consumerArguments: AMQPTable {
        switch self {
        case .first: return ["x-stream-offset": "first"]
        case .last: return ["x-stream-offset": "last"]
        case .next: return ["x-stream-offset": "next"]
        case .offset(let n): return ["x-stream-offset": .int(n)]
        case .timestamp(let date): return ["x-stream-offset": .timestamp(date)]
        }
    }
}

extension Delivery {
    /// The delivery's offset in the stream it came from (`x-stream-offset` header), nil for a
    /// queue that is not a stream.
    public var streamOffset: Int64? { properties.headers["x-stream-offset"]?.intValue }
}
