import CRabbitMQ
import FoundationEssentials

/// A synchronous connection with one channel, for CLI tools (DLQ list / replay / purge) and
/// topology declaration. Every call blocks the calling thread until the broker answers.
///
/// Not thread-safe: use one client from one thread at a time (librabbitmq: one connection per
/// thread) — from async code, confine it to one task and prefer short-lived clients. It does not
/// service heartbeats while idle: keep it busy or short-lived (CLI) or use heartbeat 0.
///
/// A channel-level error (404 on a passive declare, 406 on arguments that differ from an existing
/// queue's) throws `.channelClosed` and the client reopens its channel, so it stays usable.
public final class AMQPChannelClient {
    let connection: AMQPConnection
    var confirmsSelected = false
    /// Publish sequence number of the last message published in confirm mode on this channel.
    var publishSequence: UInt64 = 0

    /// Connects and opens channel 1.
    public init(settings: AMQPSettings) throws(AMQPError) {
        connection = try AMQPConnection(settings: settings)
    }

    /// Closes the channel and connection.
    public func close() { connection.close() }

    /// What the connected broker can do (from the version it announced).
    public var brokerFeatures: BrokerFeatures { connection.brokerFeatures }

    /// Runs a synchronous RPC and reopens the channel when the broker closed it.
    func rpc<T>(_ what: String, _ body: () -> T) throws(AMQPError) -> T {
        let result = body()
        do {
            try connection.check(what)
        } catch {
            if error.code == .channelClosed {
                try connection.openChannel(1)
                if confirmsSelected {
                    publishSequence = 0
                    _ = amqp_confirm_select(connection.raw, 1)
                    try connection.check("confirm.select")
                }
            }
            throw error
        }
        return result
    }

    /// exchange.declare (durable unless told otherwise).
    public func declareExchange(_ name: String, type: String, durable: Bool = true,
                                arguments: AMQPTable = [:]) throws(AMQPError) {
        let arena = CArena()
        try rpc("exchange.declare '\(name)'") {
            _ = amqp_exchange_declare(connection.raw, 1, arena.bytes(name), arena.bytes(type), 0,
                                      durable ? 1 : 0, 0, 0, arena.table(arguments))
        }
    }

    /// queue.declare (durable, not exclusive, not auto-delete); returns the message count.
    @discardableResult
    public func declareQueue(_ name: String, durable: Bool = true, arguments: AMQPTable = [:]) throws(AMQPError) -> UInt32 {
        let arena = CArena()
        let ok = try rpc("queue.declare '\(name)'") {
            amqp_queue_declare(connection.raw, 1, arena.bytes(name), 0, durable ? 1 : 0, 0, 0, arena.table(arguments))
        }
        return ok?.pointee.message_count ?? 0
    }

    /// Ready messages in a queue (passive declare); throws `.channelClosed` (404) when missing.
    public func messageCount(queue: String) throws(AMQPError) -> UInt32 {
        let arena = CArena()
        let ok = try rpc("queue.declare passive '\(queue)'") {
            amqp_queue_declare(connection.raw, 1, arena.bytes(queue), 1, 0, 0, 0, amqp_empty_table)
        }
        return ok?.pointee.message_count ?? 0
    }

    /// queue.bind.
    public func bindQueue(_ queue: String, exchange: String, routingKey: String,
                          arguments: AMQPTable = [:]) throws(AMQPError) {
        let arena = CArena()
        try rpc("queue.bind '\(queue)' to '\(exchange)'") {
            _ = amqp_queue_bind(connection.raw, 1, arena.bytes(queue), arena.bytes(exchange),
                                arena.bytes(routingKey), arena.table(arguments))
        }
    }

    /// queue.unbind (unbinding a binding that does not exist succeeds; a missing queue or
    /// exchange throws `.channelClosed` 404).
    public func unbindQueue(_ queue: String, exchange: String, routingKey: String,
                            arguments: AMQPTable = [:]) throws(AMQPError) {
        let arena = CArena()
        try rpc("queue.unbind '\(queue)' from '\(exchange)'") {
            _ = amqp_queue_unbind(connection.raw, 1, arena.bytes(queue), arena.bytes(exchange),
                                  arena.bytes(routingKey), arena.table(arguments))
        }
    }

    /// queue.purge; returns how many messages were removed.
    @discardableResult
    public func purgeQueue(_ queue: String) throws(AMQPError) -> UInt32 {
        let arena = CArena()
        let ok = try rpc("queue.purge '\(queue)'") {
            amqp_queue_purge(connection.raw, 1, arena.bytes(queue))
        }
        return ok?.pointee.message_count ?? 0
    }

    /// queue.delete; returns how many messages were deleted with it.
    @discardableResult
    public func deleteQueue(_ queue: String) throws(AMQPError) -> UInt32 {
        let arena = CArena()
        let ok = try rpc("queue.delete '\(queue)'") {
            amqp_queue_delete(connection.raw, 1, arena.bytes(queue), 0, 0)
        }
        return ok?.pointee.message_count ?? 0
    }

    /// exchange.delete (unconditional; deleting one that does not exist succeeds).
    public func deleteExchange(_ exchange: String) throws(AMQPError) {
        let arena = CArena()
        _ = try rpc("exchange.delete '\(exchange)'") {
            amqp_exchange_delete(connection.raw, 1, arena.bytes(exchange), 0)
        }
    }

    /// basic.get with manual ack: the next message or nil when the queue is empty. Settle it with
    /// `ack` / `nack` / `reject` on this client; closing the client requeues unsettled ones.
    public func get(queue: String) throws(AMQPError) -> Delivery? {
        let arena = CArena()
        let reply = amqp_basic_get(connection.raw, 1, arena.bytes(queue), 0)
        do {
            try connection.check(reply, "basic.get '\(queue)'")
        } catch {
            if error.code == .channelClosed { try connection.openChannel(1) }
            throw error
        }
        guard reply.reply.id == AMQPMethod.basicGetOK else { return nil }
        let ok = reply.reply.decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
        let tag = ok.delivery_tag, redelivered = ok.redelivered != 0, count = ok.message_count
        let exchange = CDecode.string(ok.exchange), routingKey = CDecode.string(ok.routing_key)
        let (properties, body, encoded, _) = try connection.readContent(channel: 1, keepEncoded: true)
        connection.releaseBuffers()
        return Delivery(body: body, properties: properties, deliveryTag: tag, redelivered: redelivered,
                        exchange: exchange, routingKey: routingKey, messageCount: count, encodedProperties: encoded)
    }

    /// Acknowledges a message taken with `get`.
    public func ack(_ deliveryTag: UInt64, multiple: Bool = false) throws(AMQPError) {
        try connection.ack(deliveryTag, multiple: multiple)
    }

    /// Negatively acknowledges a message taken with `get` (requeue or dead-letter).
    public func nack(_ deliveryTag: UInt64, multiple: Bool = false, requeue: Bool) throws(AMQPError) {
        try connection.nack(deliveryTag, multiple: multiple, requeue: requeue)
    }

    /// Rejects a message taken with `get`.
    public func reject(_ deliveryTag: UInt64, requeue: Bool) throws(AMQPError) {
        try connection.reject(deliveryTag, requeue: requeue)
    }

    /// Publishes one message and blocks until the broker confirms it (one wait per message: fine
    /// for tools and small volumes; use `publish(…)` + `nextConfirm` or `ConfirmingPublisher` for
    /// throughput). Throws `.nacked` or `.channelClosed` (e.g. 404 for a missing exchange).
    ///
    /// With `mandatory`, a message that no queue takes is not silently dropped: the broker returns
    /// it (basic.return, before its confirm) and this throws `.returned` (312 NO_ROUTE) — the
    /// caller knows it was not delivered anywhere.
    public func publishConfirmed(exchange: String, routingKey: String, body: Data,
                                 properties: MessageProperties = MessageProperties(),
                                 mandatory: Bool = false) throws(AMQPError) {
        let sequence = try publish(exchange: exchange, routingKey: routingKey, body: body, properties: properties, mandatory: mandatory)
        try awaitConfirms(from: sequence)
    }

    /// Publishes copies of messages taken with `get` or `nextDelivery`, in order (`publish(copyOf:)`),
    /// then waits until the broker confirmed every one. Throws `.nacked`, `.returned` (routed
    /// nowhere) or `.channelClosed` — then some of the copies may have been enqueued and others not.
    public func publishCopiesConfirmed(_ copies: [Delivery], exchange: String, routingKey: String) throws(AMQPError) {
        guard let first = copies.first else { return }
        let firstSequence = try publish(copyOf: first, exchange: exchange, routingKey: routingKey)
        for copy in copies.dropFirst() { try publish(copyOf: copy, exchange: exchange, routingKey: routingKey) }
        try awaitConfirms(from: firstSequence)
    }

    /// Reads confirms until the broker confirmed every publish from sequence number `first` to the
    /// last one (acks with `multiple` honoured, older acks ignored). A nack or a closed channel
    /// throws at once; a mandatory publish returned as unroutable throws `.returned` once the
    /// confirms are in, so no frame of this batch is left for the next call to misread.
    private func awaitConfirms(from first: UInt64) throws(AMQPError) {
        var outstanding = Set(first...publishSequence)
        var returned: AMQPError?
        while !outstanding.isEmpty {
            switch try nextConfirm(timeoutMicros: 1_000_000) {
            case nil: continue
            case .returned(let error): returned = returned ?? error
            case .ack(let tag, let multiple):
                if multiple { outstanding = outstanding.filter { $0 > tag } } else { outstanding.remove(tag) }
            case .nack: throw .nacked()
            }
        }
        if let returned { throw returned }
    }

    func selectConfirms() throws(AMQPError) {
        guard !confirmsSelected else { return }
        _ = try rpc("confirm.select") { amqp_confirm_select(connection.raw, 1) }
        confirmsSelected = true
        publishSequence = 0
    }

    func reopenAfterChannelClose() throws(AMQPError) {
        try connection.openChannel(1)
        publishSequence = 0
        _ = amqp_confirm_select(connection.raw, 1)
        try connection.check("confirm.select")
    }
}
