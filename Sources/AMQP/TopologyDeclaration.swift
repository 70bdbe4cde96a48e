extension Topology {
    /// Declares every exchange, queue and binding. Idempotent: declaring the same topology again
    /// changes nothing. Throws `.channelClosed` (406 PRECONDITION_FAILED) when a queue already
    /// exists with different arguments — RabbitMQ cannot change those in place.
    public func declare(on client: AMQPChannelClient) throws(AMQPError) {
        for exchange in exchanges {
            try client.declareExchange(exchange.name, type: exchange.type)
        }
        for queue in queues {
            try client.declareQueue(queue.name, arguments: queue.arguments)
        }
        for binding in bindings {
            try client.bindQueue(binding.queue, exchange: binding.exchange, routingKey: binding.routingKey)
        }
    }
}
