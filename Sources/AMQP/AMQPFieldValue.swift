import FoundationEssentials

/// A value in an AMQP field table (message headers, queue arguments, client properties).
/// Integers of every width decode to `.int`; on encoding `.int` is a signed 64-bit `l` field,
/// which RabbitMQ accepts for every numeric argument (`x-message-ttl`, `x-delivery-limit`, …).
public enum AMQPFieldValue: Sendable, Equatable, Hashable {
    case string(String)
    case bytes(Data)
    case int(Int64)
    case bool(Bool)
    case double(Double)
    /// Seconds since 1970 (AMQP timestamps have a resolution of one second).
    case timestamp(Date)
    case table([String: AMQPFieldValue])
    case array([AMQPFieldValue])
    case void

    /// The string, for `.string` (and `.bytes` holding UTF-8).
    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        case .bytes(let d): return String(data: d, encoding: .utf8)
        default: return nil
        }
    }

    /// The integer, for `.int`.
    public var intValue: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }

    /// The boolean, for `.bool`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }
}

/// A field table: header name → value.
public typealias AMQPTable = [String: AMQPFieldValue]

extension AMQPFieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
