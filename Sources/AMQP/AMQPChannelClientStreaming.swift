import CRabbitMQ
import FoundationEssentials
import Glibc

/// What the broker said about a publish in confirm mode (`AMQPChannelClient.nextConfirm`).
public enum ConfirmEvent: Sendable {
    /// Confirmed: the publish with this sequence number (and, with `multiple`, every earlier one).
    case ack(UInt64, multiple: Bool)
    /// Refused: the publish with this sequence number (and, with `multiple`, every earlier one).
    case nack(UInt64, multiple: Bool)
    /// A mandatory publish no queue took (it arrives before that publish's ack; which publish it
    /// was is not said).
    case returned(AMQPError)
}

/// Streaming use of one `AMQPChannelClient`, for tools that keep many messages in flight:
/// consume with a prefetch window and read deliveries one frame at a time; publish without
/// waiting and read the confirms as a stream. Still one thread per client.
extension AMQPChannelClient {
    /// basic.qos (`prefetch` unacked deliveries at most) and basic.consume with manual acks; the
    /// deliveries then come from `nextDelivery`. Returns the consumer tag.
    public func consume(queue: String, prefetch: UInt16) throws(AMQPError) -> String {
        let arena = CArena()
        _ = try rpc("basic.qos") { amqp_basic_qos(connection.raw, 1, 0, prefetch, 0) }
        let ok = try rpc("basic.consume '\(queue)'") {
            amqp_basic_consume(connection.raw, 1, arena.bytes(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table)
        }
        guard let ok else { throw .protocolError("basic.consume '\(queue)' gave no consumer tag") }
        return CDecode.string(ok.pointee.consumer_tag)
    }

    /// The next delivery of the consumer, waiting at most `timeoutMicros` (0: only what already
    /// arrived); its properties are kept in wire encoding too (`Delivery.encodedProperties`).
    /// A server-side cancel throws `.channelClosed`; other frames are skipped.
    public func nextDelivery(timeoutMicros: Int) throws(AMQPError) -> Delivery? {
        var wait = timeoutMicros
        while let frame = try connection.nextFrame(timeoutMicros: wait, keepEncoded: true) {
            defer { connection.releaseBuffers() }
            switch frame {
            case .deliver(let delivery): return delivery
            case .cancelledByServer(let tag): throw .channelClosed("the broker cancelled consumer \(tag) (queue deleted?)", replyCode: 0)
            case .channelClosed(_, let error):
                try connection.openChannel(1)
                throw error
            default: wait = 0
            }
        }
        return nil
    }

    /// basic.cancel, waiting for cancel-ok: no delivery follows it.
    public func cancel(consumerTag: String) throws(AMQPError) {
        let arena = CArena()
        _ = try rpc("basic.cancel") { amqp_basic_cancel(connection.raw, 1, arena.bytes(consumerTag)) }
    }

    /// Publishes one message in confirm mode without waiting; returns its sequence number, which
    /// `nextConfirm` reports.
    @discardableResult
    public func publish(exchange: String, routingKey: String, body: Data, properties: MessageProperties,
                        mandatory: Bool) throws(AMQPError) -> UInt64 {
        try selectConfirms()
        try connection.publish(exchange: exchange, routingKey: routingKey, body: body, properties: properties, mandatory: mandatory)
        publishSequence += 1
        return publishSequence
    }

    /// Publishes a copy of a delivered message, *mandatory*, with exactly the properties it arrived
    /// with (`Delivery.encodedProperties`: every header in its order and type, `x-death` included)
    /// but for `x-delivery-count`, which the broker adds on delivery (a quorum queue even on the
    /// first). Confirm mode, no wait; returns its sequence number.
    @discardableResult
    public func publish(copyOf copy: Delivery, exchange: String, routingKey: String) throws(AMQPError) -> UInt64 {
        try selectConfirms()
        if let encoded = copy.encodedProperties {
            try connection.publish(exchange: exchange, routingKey: routingKey, body: copy.body,
                                   encodedProperties: encoded, droppingHeaders: ["x-delivery-count"], mandatory: true)
        } else {
            var properties = copy.properties
            properties.headers.removeValue(forKey: "x-delivery-count")
            try connection.publish(exchange: exchange, routingKey: routingKey, body: copy.body, properties: properties, mandatory: true)
        }
        publishSequence += 1
        return publishSequence
    }

    /// The next confirm, nack or return for this channel's publishes, waiting at most
    /// `timeoutMicros` (0: only what already arrived). A closed channel (e.g. 404, missing
    /// exchange) is reopened in confirm mode (sequence numbers restart) and thrown.
    public func nextConfirm(timeoutMicros: Int) throws(AMQPError) -> ConfirmEvent? {
        var wait = timeoutMicros
        while let frame = try connection.nextFrame(timeoutMicros: wait) {
            defer { connection.releaseBuffers() }
            switch frame {
            case .returned(let code, let text, let exchange, let key, _):
                return .returned(.returned("'\(exchange)' routed '\(key)' to no queue: \(text)", replyCode: code))
            case .ack(let tag, let multiple): return .ack(tag, multiple: multiple)
            case .nack(let tag, let multiple): return .nack(tag, multiple: multiple)
            case .channelClosed(_, let error):
                try reopenAfterChannelClose()
                throw error
            default: wait = 0
            }
        }
        return nil
    }

    /// Waits until one of `clients` has a frame to read (or already buffered one), at most
    /// `timeoutMillis`.
    public static func waitForFrames(_ clients: [AMQPChannelClient], timeoutMillis: Int32) {
        if clients.contains(where: { $0.connection.hasBufferedData }) { return }
        var fds = clients.map { pollfd(fd: $0.connection.socketFD, events: Int16(POLLIN), revents: 0) }
        _ = poll(&fds, nfds_t(fds.count), timeoutMillis)
    }
}
