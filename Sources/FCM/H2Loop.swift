import Dispatch
import FoundationEssentials
import Glibc
import OSThread
import Synchronization

/// The thread of an `H2Transport`: owns every connection, polls their sockets with poll(2),
/// takes new requests from a `LoopInbox` (woken through a `LoopWakeup` the loop polls), and
/// checks deadlines every `scanInterval`.
///
/// Deadlines are found by scanning the waiting requests and open streams on each tick: nothing is
/// kept for a request once it finished.
final class H2Loop: @unchecked Sendable {

    let tlsContext: H2TLSContext
    let streamsPerConnection: Int
    let maxConnectionsPerOrigin: Int
    let connectTimeout: UInt64
    let maxResponseBytes: Int
    let timeoutError: TransportError
    /// The timeout of a request whose body was all handed to its stream (possibly delivered).
    let sentTimeoutError: TransportError
    /// How long a connection may leave the PING sent after a request timeout unanswered:
    /// the request timeout, within 1 to 10 s.
    let pingTimeout: UInt64
    /// The receive buffer shared by every connection of the loop.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    static let scanInterval: UInt64 = 50_000_000
    /// Connections opened so far (tests: a timed-out stream must not cost its connection).
    let connectionsOpened = Atomic<Int>(0)
    /// Requests sent again after a connection refused them unprocessed (tests).
    let requestsRequeued = Atomic<Int>(0)

    private let inbox = LoopInbox<H2Exchange>()
    /// Nil only when no descriptor could be made (the nofile limit): the loop then looks at its
    /// inbox every `fallbackPollMillis` instead of being woken.
    private let wakeup: LoopWakeup?
    static let fallbackPollMillis: Int32 = 5
    private let stopped = DispatchSemaphore(value: 0)
    // Loop-thread state.
    private var pools: [H2Origin: H2Pool] = [:]
    private var headerBlocks: [H2HeaderBlock] = []

    init(configuration: CurlTransportConfiguration, name: String) {
        tlsContext = H2TLSContext(configuration: configuration)
        streamsPerConnection = max(1, min(configuration.streamsPerConnection, 100))
        let maxInFlight = max(1, configuration.maxInFlight)
        maxConnectionsPerOrigin = max(1, (maxInFlight + streamsPerConnection - 1) / streamsPerConnection)
        connectTimeout = H2Clock.nanoseconds(configuration.connectTimeout)
        maxResponseBytes = max(1, configuration.maxResponseBytes)
        pingTimeout = min(max(H2Clock.nanoseconds(configuration.requestTimeout), 1_000_000_000), 10_000_000_000)
        timeoutError = TransportError(kind: .timeout, message: "no response within \(configuration.requestTimeout)")
        sentTimeoutError = TransportError(kind: .timeoutAfterSend,
                                          message: "no response within \(configuration.requestTimeout) to a request sent whole: possibly delivered")
        wakeup = try? LoopWakeup()
        OSThread.start(name: name) { [self] in run() }
    }

    deinit { readBuffer.deallocate() }

    /// Queues a request for the loop's thread; fails it at once after `close()`.
    func submit(_ exchange: H2Exchange) {
        if !inbox.submit(exchange, wake: wake) {
            exchange.finish(.failure(TransportError(kind: .shutdown, message: "transport shut down")))
        }
    }

    /// Stops the loop: every waiting and in-flight request fails with `.shutdown`, every
    /// connection closes. Waits for the thread, then closes the wake-up (no submit signals it
    /// once the inbox is closed). Idempotent.
    func close() {
        guard inbox.close() else { return }
        wake()
        stopped.wait()
        wakeup?.close()
    }

    private func wake() { wakeup?.signal() }

    private func run() {
        var fds: [pollfd] = []
        var polled: [H2Connection] = []
        var nextScan = H2Clock.now() &+ Self.scanInterval
        var batch: [H2Exchange] = []
        while true {
            let closed = inbox.take(into: &batch)
            for exchange in batch { route(exchange) }
            batch.removeAll(keepingCapacity: true)
            if closed { break }
            var busy = false
            for pool in pools.values {
                pool.pump()
                busy = busy || pool.isBusy
            }
            fds.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakeup?.fd ?? -1, events: Int16(POLLIN), revents: 0))
            for pool in pools.values {
                for connection in pool.connections where connection.interest != 0 {
                    fds.append(pollfd(fd: connection.fd, events: connection.interest, revents: 0))
                    polled.append(connection)
                }
            }
            var timeout: Int32 = 1000
            if busy {
                let now = H2Clock.now()
                timeout = nextScan <= now ? 0 : Int32((nextScan - now + 999_999) / 1_000_000)
            }
            if wakeup == nil { timeout = min(timeout, Self.fallbackPollMillis) }
            if poll(&fds, nfds_t(fds.count), timeout) > 0 {
                if fds[0].revents != 0 { wakeup?.consume() }
                for (index, connection) in polled.enumerated() where fds[index + 1].revents != 0 {
                    if connection.state != .closed { connection.handle(events: fds[index + 1].revents) }
                }
            }
            let now = H2Clock.now()
            if now >= nextScan {
                for pool in pools.values { pool.expire(now: now) }
                nextScan = now &+ Self.scanInterval
            }
        }
        let shutdown = TransportError(kind: .shutdown, message: "transport shut down")
        for pool in pools.values { pool.close(with: shutdown) }
        pools.removeAll()
        headerBlocks.removeAll()
        stopped.signal()
    }

    /// Finds (or builds) the request's header block and queues it on its origin's pool.
    private func route(_ exchange: H2Exchange) {
        let request = exchange.request
        let block: H2HeaderBlock
        if let known = headerBlocks.first(where: { $0.url == request.url && $0.lines == request.headers }) {
            block = known
        } else {
            guard let made = H2HeaderBlock(url: request.url, lines: request.headers) else {
                exchange.finish(.failure(TransportError(kind: .other, message: "unsupported URL (http:// or https:// only)")))
                return
            }
            headerBlocks.insert(made, at: 0)
            if headerBlocks.count > 16 { headerBlocks.removeLast() }
            block = made
        }
        exchange.headers = block
        let pool: H2Pool
        if let existing = pools[block.origin] {
            pool = existing
        } else {
            pool = H2Pool(origin: block.origin, loop: self)
            pools[block.origin] = pool
        }
        pool.enqueue(exchange)
    }
}
