import CRabbitMQ
import FoundationEssentials

/// A fleet's control line, on its own connection and thread: the process binds an exclusive,
/// server-named queue to a fanout exchange and receives on `messages` every body anyone
/// publishes there (its own included). The same connection reads a queue's consumer count
/// (passive `queue.declare`), so a worker learns how many consumers share its job queue.
///
/// Messages are transient: not persistent, with a TTL, published without confirms. Losing one
/// costs a few extra requests, never a push. The stream finishes with an error when the
/// connection or channel is lost (or the broker cancels the consumer); the caller reopens a new
/// channel with backoff. Always `close()` at the end: it ends the thread and the connection, and
/// the broker deletes the queue with it.
public final class ControlChannel: Sendable {
    enum Command: Sendable {
        case publish(Data, ttl: Duration)
        case consumerCount(queue: String, CheckedContinuation<Int, any Error>)
        case close(CheckedContinuation<Void, Never>)
    }

    /// Bodies of the messages published to the exchange, in the broker's order.
    public let messages: AsyncThrowingStream<Data, any Error>
    /// The fanout exchange listened to and published to.
    public let exchange: String
    private let commands: CommandQueue<Command>
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation

    private init(exchange: String) throws(AMQPError) {
        commands = try CommandQueue()
        self.exchange = exchange
        (messages, continuation) = AsyncThrowingStream.makeStream(of: Data.self, throwing: (any Error).self)
    }

    /// Connects, declares an exclusive auto-delete queue (messages older than `queueTTL` are
    /// dropped), binds it to `exchange` (which must exist: see `Topology`) and consumes it.
    public static func open(settings: AMQPSettings, exchange: String, queueTTL: Duration = .seconds(60)) async throws -> ControlChannel {
        let channel = try ControlChannel(exchange: exchange)
        try await withCheckedThrowingContinuation { (ready: CheckedContinuation<Void, any Error>) in
            startConnectionThread(name: "amqp-control \(exchange)") {
                channel.run(settings: settings, queueTTL: queueTTL, ready: ready)
            }
        }
        return channel
    }

    /// Publishes `body` to the exchange, transient, expiring after `ttl`; no confirm. False when
    /// the channel is already closed or lost (nothing was sent).
    @discardableResult
    public func publish(_ body: Data, ttl: Duration) -> Bool {
        commands.submit(.publish(body, ttl: ttl))
    }

    /// The number of consumers of `queue` right now (passive declare). A missing queue throws
    /// and, like any error here, ends the channel.
    public func consumerCount(of queue: String) async throws -> Int {
        try await withCheckedThrowingContinuation { (answer: CheckedContinuation<Int, any Error>) in
            if !commands.submit(.consumerCount(queue: queue, answer)) { answer.resume(throwing: AMQPError.closed("the control channel")) }
        }
    }

    /// Closes the connection and waits for the thread to end. Safe to call more than once.
    public func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            if !commands.submit(.close(done)) { done.resume() }
        }
    }

    // MARK: connection thread

    private func run(settings: AMQPSettings, queueTTL: Duration, ready: CheckedContinuation<Void, any Error>) {
        let connection: AMQPConnection
        do {
            connection = try AMQPConnection(settings: settings)
            let arena = CArena()
            let ttl: AMQPTable = ["x-message-ttl": .int(Int64(queueTTL.components.seconds) * 1000)]
            let declared = amqp_queue_declare(connection.raw, 1, amqp_empty_bytes, 0, 0, 1, 1, arena.table(ttl))
            try connection.check("queue.declare (control)")
            guard let declared else { throw AMQPError.protocolError("queue.declare (control) gave no queue name") }
            let queue = CDecode.string(declared.pointee.queue)
            _ = amqp_queue_bind(connection.raw, 1, arena.bytes(queue), arena.bytes(exchange), amqp_empty_bytes, amqp_empty_table)
            try connection.check("queue.bind '\(queue)' to '\(exchange)'")
            _ = amqp_basic_consume(connection.raw, 1, arena.bytes(queue), amqp_empty_bytes, 0, 1, 1, amqp_empty_table)
            try connection.check("basic.consume on '\(queue)'")
        } catch {
            _ = commands.close()
            continuation.finish(throwing: error)
            ready.resume(throwing: error)
            return
        }
        ready.resume()

        let pollMillis = loopPollMillis(settings)
        var closers: [CheckedContinuation<Void, Never>] = []
        var unprocessed: [Command] = []
        var failure: any Error = AMQPError.closed("the control channel")
        var batch: [Command] = []
        do {
            loop: while true {
                commands.drain(into: &batch)
                for (index, command) in batch.enumerated() {
                    unprocessed = Array(batch[(index + 1)...])
                    switch command {
                    case .publish(let body, let ttl):
                        let millis = max(1, ttl.components.seconds * 1000 + ttl.components.attoseconds / 1_000_000_000_000_000)
                        try connection.publish(exchange: exchange, routingKey: "", body: body,
                                               properties: MessageProperties(contentType: "application/json", persistent: false,
                                                                             expiration: String(millis)),
                                               mandatory: false)
                    case .consumerCount(let queue, let answer):
                        let arena = CArena()
                        let ok = amqp_queue_declare(connection.raw, 1, arena.bytes(queue), 1, 0, 0, 0, amqp_empty_table)
                        do {
                            try connection.check("queue.declare passive '\(queue)'")
                        } catch {
                            answer.resume(throwing: error)
                            throw error
                        }
                        answer.resume(returning: Int(ok?.pointee.consumer_count ?? 0))
                    case .close(let done):
                        closers.append(done)
                        break loop
                    }
                }
                unprocessed = []
                var readAny = 0
                while readAny < 256, let frame = try connection.nextFrame(timeoutMicros: 0) {
                    readAny += 1
                    switch frame {
                    case .deliver(let delivery): continuation.yield(delivery.body)
                    case .cancelledByServer: throw AMQPError.consumerCancelledByServer("control queue")
                    case .channelClosed(_, let error): throw error
                    default: break
                    }
                    connection.releaseBuffers()
                }
                if readAny == 0 { commands.wait(socketFD: connection.socketFD, timeoutMillis: pollMillis) }
            }
            connection.close()
            continuation.finish()
        } catch {
            failure = error
            connection.close(polite: false)
            continuation.finish(throwing: error)
        }
        for leftover in unprocessed + commands.close() {
            switch leftover {
            case .publish: break
            case .consumerCount(_, let answer): answer.resume(throwing: failure)
            case .close(let done): closers.append(done)
            }
        }
        for done in closers { done.resume() }
    }
}
