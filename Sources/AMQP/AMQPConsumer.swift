import CRabbitMQ
import Glibc
import OSThread
import FoundationEssentials
import Synchronization

/// Consumes one queue with manual acks on its own connection and its own thread.
///
/// Declares nothing: the queue must exist (see `Topology`). Deliveries arrive on `deliveries`,
/// or, when `start` is given a `handler`, are handed to it on the connection thread (no task, no
/// hop: the caller's work starts on the thread that read the frame; `deliveries` then carries
/// none and only ends, as below). Settle each with `ack` / `nack` / `reject`, from any thread or
/// task: the command is queued and executed on the connection thread, in submission order. At most `prefetch` deliveries are
/// unsettled at a time (basic.qos), which bounds the stream's buffer.
///
/// The stream finishes:
/// - normally after `cancel()` once the broker confirmed the cancel (settle what you hold,
///   then `close()`);
/// - with `AMQPError.consumerCancelledByServer` when the broker cancels the consumer (queue
///   deleted, failover), or `.connectionLost` / `.channelClosed` when the connection dies. The
///   caller reconnects with backoff by starting a new consumer; unsettled deliveries of a dead
///   connection are redelivered by the broker (settling them on the old consumer is a no-op).
///
/// Coalesced acks (`start(coalescingAcks: true)`): settle with `complete` instead, in any order;
/// the connection thread acks with `multiple` over contiguous completed deliveries (`AckCoalescer`),
/// at most once per pass of its loop, and flushes every completed one before `close()` closes the
/// channel. Deliveries never completed stay unacked (requeued at close). Do not mix `complete`
/// with `ack` / `nack` / `reject` on such a consumer.
///
/// A sized prefetch (`start(sizing:)`, with coalesced acks): the connection thread re-sizes the
/// prefetch to the bytes it holds (`PrefetchSizer`) by cancelling the consumer and consuming
/// again with a new basic.qos on the same channel, at once when growing, once the held bytes
/// leave room when shrinking (meanwhile `prefetch` is 0). The deliveries of the old consumer
/// stay valid (delivery tags go on along the channel) and are acked as before; nothing is
/// requeued.
///
/// Always call `close()` at the end: it executes the settlements queued before it, closes the
/// channel and connection (the broker requeues what is still unacked) and ends the thread.
public final class AMQPConsumer: Sendable {
    enum Command: Sendable {
        case ack(UInt64, multiple: Bool)
        case complete(UInt64)
        case nack(UInt64, multiple: Bool, requeue: Bool)
        case reject(UInt64, requeue: Bool)
        case cancel
        case close(CheckedContinuation<Void, Never>)
        case run(@Sendable () -> Void)
    }

    /// The deliveries, in the broker's order.
    public let deliveries: AsyncThrowingStream<Delivery, any Error>
    /// The queue being consumed.
    public let queue: String
    /// The prefetch the consumer runs with now (it changes only when sized; 0 while it waits for
    /// room to consume again).
    public var prefetch: UInt16 { currentPrefetch.load(ordering: .relaxed) }
    /// What the broker consumed from can do (known once `start` returned).
    public var brokerFeatures: BrokerFeatures { features.withLock { $0 } }
    private let features = Mutex(BrokerFeatures.baseline)
    private let currentPrefetch: Atomic<UInt16>
    private let commands: CommandQueue<Command>
    /// The connection thread (`pthread_self`), set before its first delivery.
    private let thread = Atomic<UInt>(0)
    /// Set as the connection thread stops consuming, before its leftover commands run and its
    /// command queue closes (`hasEnded`).
    private let ended = Atomic<Bool>(false)
    private let continuation: AsyncThrowingStream<Delivery, any Error>.Continuation
    /// Called with each delivery on the connection thread instead of `deliveries` (nil: the stream).
    private let handler: (@Sendable (Delivery, AMQPConsumer) -> Void)?

    private init(queue: String, prefetch: UInt16, handler: (@Sendable (Delivery, AMQPConsumer) -> Void)?) throws(AMQPError) {
        commands = try CommandQueue()
        self.queue = queue
        self.handler = handler
        currentPrefetch = Atomic(prefetch)
        (deliveries, continuation) = AsyncThrowingStream.makeStream(of: Delivery.self, throwing: (any Error).self)
    }

    /// Connects, sets basic.qos(prefetch) and starts basic.consume on `queue` (manual acks).
    /// Returns once the broker answered consume-ok; throws `AMQPError` otherwise.
    ///
    /// `arguments` are basic.consume's: for a stream, `x-stream-offset` (`StreamOffset`) says
    /// where to start; every delivery then carries its offset (`Delivery.streamOffset`). A
    /// stream needs the manual acks too: they return the credit `prefetch` hands out.
    ///
    /// `sizing` (which implies `coalescingAcks`) sets the prefetch instead of `prefetch`: it
    /// starts at `sizing.initial` and follows the bytes held (see the type's notes).
    ///
    /// `brokerArguments` adds consume arguments that depend on what the broker can do, decided
    /// once connected (`BrokerFeatures`, also on `brokerFeatures` afterwards).
    ///
    /// `handler` takes every delivery, with the consumer to settle it on, on the connection
    /// thread between two frames (possibly before `start` returns): it must not block (it starts
    /// work and returns); `deliveries` then only ends (normally or with the error that ended
    /// consumption).
    ///
    /// `bodyLimit`: a body declared larger is never held whole; the delivery carries its first
    /// 64 KiB and its declared size (`Delivery.isTruncated`), so that the handler can refuse it.
    public static func start(settings: AMQPSettings, queue: String, prefetch: UInt16,
                             exclusive: Bool = false, arguments: AMQPTable = [:],
                             brokerArguments: (@Sendable (BrokerFeatures) -> AMQPTable)? = nil,
                             coalescingAcks: Bool = false, sizing: PrefetchSizer? = nil, bodyLimit: Int? = nil,
                             handler: (@Sendable (Delivery, AMQPConsumer) -> Void)? = nil) async throws -> AMQPConsumer {
        let consumer = try AMQPConsumer(queue: queue, prefetch: sizing?.initial ?? prefetch, handler: handler)
        let coalescer = coalescingAcks || sizing != nil
            ? AckCoalescer(stragglerLimit: Int(consumer.prefetch) / 4) : nil
        try await withCheckedThrowingContinuation { (ready: CheckedContinuation<Void, any Error>) in
            startConnectionThread(name: "amqp-consumer \(queue)") {
                consumer.run(settings: settings, exclusive: exclusive, arguments: arguments, brokerArguments: brokerArguments,
                             coalescer: coalescer, sizing: sizing, bodyLimit: bodyLimit, ready: ready)
            }
        }
        return consumer
    }

    /// Acknowledges a delivery (and every earlier one when `multiple`).
    public func ack(_ deliveryTag: UInt64, multiple: Bool = false) {
        commands.submit(.ack(deliveryTag, multiple: multiple))
    }

    /// Marks a delivery done (a consumer started with `coalescingAcks`): it is acked, possibly
    /// with `multiple` together with others, once every earlier delivery is done too (or as a
    /// straggler, see `AckCoalescer`).
    public func complete(_ deliveryTag: UInt64) {
        commands.submit(.complete(deliveryTag))
    }

    /// Negatively acknowledges; `requeue: false` dead-letters (when the queue has a DLX) or drops.
    public func nack(_ deliveryTag: UInt64, multiple: Bool = false, requeue: Bool) {
        commands.submit(.nack(deliveryTag, multiple: multiple, requeue: requeue))
    }

    /// Rejects one delivery (basic.reject).
    public func reject(_ deliveryTag: UInt64, requeue: Bool) {
        commands.submit(.reject(deliveryTag, requeue: requeue))
    }

    /// Asks the broker to stop delivering (basic.cancel). Deliveries already sent still arrive;
    /// then `deliveries` finishes without error. Settle what you hold, then `close()`.
    public func cancel() {
        commands.submit(.cancel)
    }

    /// Runs `work` on the connection thread, in order with the settlements submitted around it,
    /// with that thread's `PollLoop` current: how work that went on elsewhere (a task, an answer
    /// on another thread) comes back to the thread that read its delivery. Once the consumer
    /// ended (closed or lost), `work` runs at once on the calling thread instead; never dropped.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        if !commands.submit(.run(work)) { work() }
    }

    /// True once the consumer ended (closed, or its connection lost): no settlement lands any more,
    /// and the broker requeues every delivery it held. Work handed to `execute` from now on runs
    /// at once (among the connection thread's last commands, or on the caller's thread).
    public var hasEnded: Bool { ended.load(ordering: .relaxed) }

    /// True on the connection thread while the consumer runs (false once it ended: a step given
    /// on that thread while it winds down is the caller's, as on any other thread).
    public var isCurrentThread: Bool {
        !hasEnded && thread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Executes the settlements submitted before this call, closes the connection and waits for
    /// the connection thread to end. Safe to call more than once or after a connection loss.
    public func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            if !commands.submit(.close(done)) { done.resume() }
        }
    }

    // MARK: connection thread

    /// basic.qos then basic.consume on channel 1; returns the consumer tag. Connection thread.
    private func startConsuming(_ connection: AMQPConnection, prefetch: UInt16, exclusive: Bool,
                                arguments: AMQPTable) throws(AMQPError) -> String {
        _ = amqp_basic_qos(connection.raw, 1, 0, prefetch, 0)
        try connection.check("basic.qos")
        let arena = CArena()
        let ok = amqp_basic_consume(connection.raw, 1, arena.bytes(queue), amqp_empty_bytes, 0, 0,
                                    exclusive ? 1 : 0, arena.table(arguments))
        try connection.check("basic.consume on '\(queue)'")
        currentPrefetch.store(prefetch, ordering: .relaxed)
        return CDecode.string(ok!.pointee.consumer_tag)
    }

    private func run(settings: AMQPSettings, exclusive: Bool, arguments: AMQPTable,
                     brokerArguments: (@Sendable (BrokerFeatures) -> AMQPTable)?, coalescer: AckCoalescer?, sizing: PrefetchSizer?,
                     bodyLimit: Int?, ready: CheckedContinuation<Void, any Error>) {
        var coalescer = coalescer
        let connection: AMQPConnection
        var consumerTag: String
        var arguments = arguments
        do {
            connection = try AMQPConnection(settings: settings)
            connection.bodyLimit = bodyLimit
            features.withLock { $0 = connection.brokerFeatures }
            if let brokerArguments { arguments.merge(brokerArguments(connection.brokerFeatures)) { _, added in added } }
            consumerTag = try startConsuming(connection, prefetch: prefetch, exclusive: exclusive, arguments: arguments)
        } catch {
            finish(throwing: error)
            ready.resume(throwing: error)
            return
        }
        ready.resume()
        // The thread's poll set: a handler's work may attach sources to it (a lane's HTTP/2
        // connections, `PollLoop`), polled together with this connection.
        let loop = PollLoop()
        thread.store(UInt(pthread_self()), ordering: .relaxed)
        defer { loop.end(within: Self.sourcesGrace) }

        let pollMillis = loopPollMillis(settings)
        var closers: [CheckedContinuation<Void, Never>] = []
        var unprocessed: [Command] = []  // drained but not executed (error or close mid-batch)
        var subscription = ConsumerSubscription()
        func sendAcks(flush: Bool) throws(AMQPError) {
            guard let pending = coalescer?.completed, pending > 0 else { return }
            for ack in coalescer!.acks(now: .now, flush: flush) {
                try connection.ack(ack.deliveryTag, multiple: ack.multiple)
            }
        }
        /// Carries out what the subscription decided (`ConsumerSubscription`).
        func take(_ step: ConsumerSubscription.Step) throws(AMQPError) {
            switch step {
            case .nothing: break
            case .sendCancel: try connection.sendCancel(consumerTag: consumerTag)
            case .consume(let target):
                consumerTag = try startConsuming(connection, prefetch: target, exclusive: exclusive, arguments: arguments)
                coalescer?.stragglerLimit = Int(target) / 4
            case .hold: currentPrefetch.store(0, ordering: .relaxed)
            case .finishStream: continuation.finish()
            }
        }
        var batch: [Command] = []
        do {
            loop: while true {
                commands.drain(into: &batch)
                for (index, command) in batch.enumerated() {
                    do {
                        switch command {
                        case .ack(let tag, let multiple): try connection.ack(tag, multiple: multiple)
                        case .complete(let tag): coalescer?.complete(tag)
                        case .nack(let tag, let multiple, let requeue):
                            try connection.nack(tag, multiple: multiple, requeue: requeue)
                        case .reject(let tag, let requeue): try connection.reject(tag, requeue: requeue)
                        case .run(let work): work()
                        case .cancel:
                            try take(subscription.cancel())
                        case .close(let done):
                            closers.append(done)
                            unprocessed = Array(batch[(index + 1)...])
                            try sendAcks(flush: true)
                            break loop
                        }
                    } catch {
                        unprocessed = Array(batch[(index + 1)...])
                        throw error
                    }
                }
                try sendAcks(flush: false)
                var readAny = 0
                while readAny < 512, let frame = try connection.nextFrame(timeoutMicros: 0) {
                    readAny += 1
                    switch frame {
                    case .deliver(let delivery):
                        coalescer?.delivered(delivery.deliveryTag, bytes: delivery.body.count)
                        if subscription.handsOutDeliveries {
                            if let handler { handler(delivery, self) } else {
                                ThreadHandoffs.record()  // to the task that reads the stream
                                continuation.yield(delivery)
                            }
                        }
                    case .other(let method) where method == AMQPMethod.basicCancelOK:
                        try take(subscription.cancelConfirmed())
                    case .cancelledByServer:
                        subscription.cancelledByServer()
                        continuation.finish(throwing: AMQPError.consumerCancelledByServer(queue))
                    case .channelClosed(_, let error):
                        throw error
                    default: break
                    }
                    connection.releaseBuffers()
                }
                if let sizing, let held = coalescer {
                    try take(subscription.size(
                        resize: { sizing.resize(current: prefetch, held: held.held, heldBytes: held.heldBytes, largestHeld: held.largestHeld) },
                        mayConsume: { sizing.mayConsume($0, held: held.held, heldBytes: held.heldBytes, largestHeld: held.largestHeld) }))
                }
                if readAny == 0 {
                    commands.wait(socketFD: connection.socketFD, timeoutMillis: pollMillis, on: loop)
                } else if loop.hasSources {
                    commands.wait(socketFD: connection.socketFD, timeoutMillis: 0, on: loop)  // the sources' turn
                }
            }
            connection.close()
            continuation.finish()
        } catch {
            connection.close()
            finish(throwing: error)
        }
        // Settlements after a close or a loss are no-ops (the broker requeues); work still runs,
        // here, with the loop still current; closers resume.
        ended.store(true, ordering: .relaxed)
        for leftover in unprocessed + commands.close() {
            switch leftover {
            case .close(let done): closers.append(done)
            case .run(let work): work()
            default: break
            }
        }
        for done in closers { done.resume() }
    }

    /// How long the thread stays, once the consumer ended, for the sources it hosts to finish
    /// their work (the answers of requests in flight); their own deadlines end it sooner.
    static let sourcesGrace: UInt64 = 120_000_000_000

    private func finish(throwing error: any Error) {
        continuation.finish(throwing: error)
    }
}
