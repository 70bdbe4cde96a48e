import FoundationEssentials
import Synchronization

/// Reads a RabbitMQ stream from an offset (`StreamOffset`) with one `AMQPConsumer`, one
/// delivery at a time, with a timeout: `next(within:)` returns nil when nothing arrived in time
/// (a stream never says it has reached its end). Each delivery is acked as it enters a small
/// buffer (on a stream an ack only returns credit), so the reader holds nothing unacked while it
/// waits; the buffer's limit (`bufferLimit`) keeps the backpressure of the prefetch.
/// Used by `push-connector results` and the tests.
///
/// With `filterValues` on a broker with stream filtering (`BrokerFeatures.streamFiltering`,
/// RabbitMQ 3.13+), the broker skips the chunks holding none of those values (results carry
/// their App ID as `x-stream-filter-value`); chunks written without values (by an earlier
/// version) are read whole. Elsewhere every message is read. Either way the caller must still filter what it reads: the broker's filter
/// is a Bloom filter per chunk and lets other values through.
public final class StreamReader: Sendable {
    private let consumer: AMQPConsumer
    /// True when the broker filters by `filterValues` (asked and supported).
    public let brokerFilters: Bool
    /// Messages read from the stream so far, whether the caller keeps them or not.
    public var delivered: Int { buffer.delivered.load(ordering: .relaxed) }
    private final class Buffer: Sendable {
        let state = Mutex<(deliveries: [Delivery], failure: (any Error)?, ended: Bool)>(([], nil, false))
        let delivered = Atomic(0)
        func withLock<T>(_ body: (inout (deliveries: [Delivery], failure: (any Error)?, ended: Bool)) -> T) -> T { state.withLock { body(&$0) } }
    }
    private let buffer = Buffer()
    private let pump: Task<Void, Never>
    /// Deliveries acked and not yet handed out, at most.
    static let bufferLimit = 256

    /// Starts consuming `stream` at `from` (basic.qos `prefetch`), filtered by the broker to
    /// `filterValues` where it can (see above).
    public init(settings: AMQPSettings, stream: String, from: StreamOffset, prefetch: UInt16 = 500,
                filterValues: [String] = []) async throws {
        let filter: AMQPTable = [
            "x-stream-filter": AMQPFieldValue.array(filterValues.map { AMQPFieldValue.string($0) }),
            "x-stream-match-unfiltered": AMQPFieldValue.bool(true),
        ]
        let asked = !filterValues.isEmpty
        let consumer = try await AMQPConsumer.start(settings: settings, queue: stream, prefetch: prefetch, arguments: from.consumerArguments,
                                                    brokerArguments: { features in asked && features.streamFiltering ? filter : [:] })
        self.consumer = consumer
        brokerFilters = !filterValues.isEmpty && consumer.brokerFeatures.streamFiltering
        let buffer = self.buffer
        pump = Task {
            do {
                for try await delivery in consumer.deliveries {
                    while buffer.withLock({ $0.deliveries.count >= Self.bufferLimit }) {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    buffer.withLock { $0.deliveries.append(delivery) }
                    buffer.delivered.add(1, ordering: .relaxed)
                    consumer.ack(delivery.deliveryTag)
                }
                buffer.withLock { $0.ended = true }
            } catch {
                buffer.withLock { $0.failure = error; $0.ended = true }
            }
        }
    }

    /// The next delivery, waiting at most `timeout` (forever when nil); nil when none came in
    /// time. Throws what ended the consumer (connection lost, stream deleted).
    public func next(within timeout: Duration?) async throws -> Delivery? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            let (delivery, failure, ended) = buffer.withLock { state -> (Delivery?, (any Error)?, Bool) in
                state.deliveries.isEmpty ? (nil, state.failure, state.ended) : (state.deliveries.removeFirst(), nil, false)
            }
            if let delivery { return delivery }
            if let failure { throw failure }
            if ended { throw Ended(stream: consumer.queue) }
            if let deadline, ContinuousClock.now >= deadline { return nil }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The consumer ended without an error (cancelled).
    public struct Ended: Error, CustomStringConvertible {
        public let stream: String
        public var description: String { "the consumer of \(stream) ended" }
    }

    /// Stops consuming and closes the connection.
    public func close() async {
        consumer.cancel()
        pump.cancel()  // it may be waiting for room in a full buffer nobody reads any more
        await consumer.close()
        await pump.value
    }
}
