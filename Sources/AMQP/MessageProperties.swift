import FoundationEssentials

/// The basic-class properties of a message (what travels in the content header).
/// `persistent` maps to delivery-mode 2; the defaults suit our jobs and results.
public struct MessageProperties: Sendable, Equatable {
    public var contentType: String?
    public var contentEncoding: String?
    public var headers: AMQPTable
    /// Delivery mode 2 (written to disk by the broker) when true, 1 otherwise.
    public var persistent: Bool
    public var priority: UInt8?
    public var correlationID: String?
    public var replyTo: String?
    /// Per-message TTL in milliseconds, as a decimal string (AMQP `expiration`).
    public var expiration: String?
    public var messageID: String?
    public var timestamp: Date?
    public var type: String?
    public var appID: String?

    public init(contentType: String? = nil, contentEncoding: String? = nil, headers: AMQPTable = [:],
                persistent: Bool = true, priority: UInt8? = nil, correlationID: String? = nil,
                replyTo: String? = nil, expiration: String? = nil, messageID: String? = nil,
                timestamp: Date? = nil, type: String? = nil, appID: String? = nil) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.headers = headers
        self.persistent = persistent
        self.priority = priority
        self.correlationID = correlationID
        self.replyTo = replyTo
        self.expiration = expiration
        self.messageID = messageID
        self.timestamp = timestamp
        self.type = type
        self.appID = appID
    }
}

/// One message handed over by the broker, from `AMQPConsumer` or `AMQPChannelClient.get`.
/// Settle it with its `deliveryTag` on the object that delivered it.
public struct Delivery: Sendable {
    /// The message bytes, exactly as published.
    public var body: Data
    public var properties: MessageProperties
    /// Channel-scoped tag to ack / nack / reject with.
    public var deliveryTag: UInt64
    /// True when the broker delivered this message before (to this or another consumer).
    public var redelivered: Bool
    public var exchange: String
    public var routingKey: String
    /// Messages still in the queue after this one (only from basic.get; nil for consumers).
    public var messageCount: UInt32?
    /// The content header's properties in wire encoding, every header in its order and with its
    /// AMQP type (only from `AMQPChannelClient.get`): republish with them to copy a message
    /// byte for byte (`AMQPChannelClient.publishConfirmed(_:)`).
    public var encodedProperties: Data? = nil
    /// The body's size as the broker declared it: larger than `body.count` when the consumer
    /// kept only the start of a body over its limit (`AMQPConsumer.start(bodyLimit:)`).
    public var declaredBodySize: Int

    /// True when `body` is only the start of the message's body.
    public var isTruncated: Bool { declaredBodySize > body.count }

    public init(body: Data, properties: MessageProperties, deliveryTag: UInt64, redelivered: Bool = false,
                exchange: String = "", routingKey: String = "", messageCount: UInt32? = nil, encodedProperties: Data? = nil) {
        self.body = body
        self.properties = properties
        self.deliveryTag = deliveryTag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routingKey = routingKey
        self.messageCount = messageCount
        self.encodedProperties = encodedProperties
        declaredBodySize = body.count
    }
}
