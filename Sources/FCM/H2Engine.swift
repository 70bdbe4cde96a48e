import FoundationEssentials
import Glibc
import OSThread
import Synchronization

/// What every engine of one `H2Transport` shares: the TLS setup, the limits and error texts
/// derived from the configuration, and the counters tests read.
final class H2Shared: Sendable {
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
    /// Connections opened so far (tests: a timed-out stream must not cost its connection).
    let connectionsOpened = Atomic<Int>(0)
    /// Requests sent again after a connection refused them unprocessed (tests).
    let requestsRequeued = Atomic<Int>(0)
    /// The engines lane threads made, until they end (`H2Transport.shutdown` closes them).
    let laneEngines = Mutex<[ObjectIdentifier: H2Engine]>([:])

    init(configuration: CurlTransportConfiguration) {
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
    }
}

/// The connections and requests of an `H2Transport` on one thread, as a source of that
/// thread's `PollLoop`: the transport's own `fcm-h2` thread, or a lane's consumer thread that
/// started a request (its requests and answers then stay on that thread). Takes requests from
/// the thread itself (`enqueue`) or from others through an inbox woken by a `LoopWakeup`, polls
/// its connections' sockets, and checks deadlines every `scanInterval` while busy.
///
/// Deadlines are found by scanning the waiting requests and open streams: nothing is kept for a
/// request once it finished. Thread-confined but for `submit` and `close`.
final class H2Engine: PollSource, @unchecked Sendable {
    let shared: H2Shared
    /// The receive buffer of every connection of the engine.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    static let scanInterval: UInt64 = 50_000_000
    /// Nil only when no descriptor could be made (the nofile limit): the engine then looks at
    /// its inbox every `fallbackPollMillis` instead of being woken.
    private let wakeup: LoopWakeup?
    static let fallbackPollMillis: UInt64 = 5
    private let inbox = LoopInbox<H2Exchange>()
    /// Called once when the engine ends (the transport forgets it).
    private let ended: @Sendable (H2Engine) -> Void
    // Engine-thread state.
    private var pools: [H2Origin: H2Pool] = [:]
    private var headerBlocks: [H2HeaderBlock] = []
    private var batch: [H2Exchange] = []
    /// The connections `interests` gave to the last poll, in order.
    private var polled: [H2Connection] = []
    private var nextScan: UInt64 = 0
    /// True once the engine ended (closed, or its thread's loop ended): it takes nothing more.
    private(set) var isEnded = false
    /// The key it is attached to its thread's loop under (`PollLoop.source(for:)`): its
    /// transport's. Set before the engine's thread first sees it.
    var owner: ObjectIdentifier

    init(shared: H2Shared, owner: ObjectIdentifier, ended: @escaping @Sendable (H2Engine) -> Void = { _ in }) {
        self.shared = shared
        self.owner = owner
        self.ended = ended
        wakeup = try? LoopWakeup()
    }

    deinit { readBuffer.deallocate() }

    // MARK: any thread

    /// Queues a request from another thread; fails it at once once the engine is closed.
    func submit(_ exchange: H2Exchange) {
        if !inbox.submit(exchange, wake: { wakeup?.signal() }) {
            exchange.finish(.failure(TransportError(kind: .shutdown, message: "transport shut down")))
        }
    }

    /// Asks the engine to end at its thread's next pass: every waiting and in-flight request
    /// fails with `.shutdown`, every connection closes. True only the first time.
    @discardableResult
    func close() -> Bool {
        guard inbox.close() else { return false }
        wakeup?.signal()
        return true
    }

    /// Closes the wake-up descriptor once the engine ended and nothing can signal it any more
    /// (the transport's own engine, after its thread stopped). A lane engine's closes when the
    /// engine is freed: whoever could signal it holds it until then.
    func closeWakeup() { wakeup?.close() }

    // MARK: the engine's thread

    /// Routes a request started on the engine's own thread (no inbox, no wake-up).
    func enqueue(_ exchange: H2Exchange) {
        if isEnded { return exchange.finish(.failure(TransportError(kind: .shutdown, message: "transport shut down"))) }
        route(exchange)
    }

    func pass(now: UInt64) -> UInt64? {
        guard !isEnded else { return nil }
        let closed = inbox.take(into: &batch)
        for exchange in batch { route(exchange) }
        batch.removeAll(keepingCapacity: true)
        if closed {
            end()
            return now  // one more turn without sleeping: whoever waits for the end sees it
        }
        var busy = false
        if now >= nextScan {
            for pool in pools.values { pool.expire(now: now) }
            nextScan = now &+ Self.scanInterval
        }
        for pool in pools.values {
            pool.pump()
            busy = busy || pool.isBusy
        }
        if wakeup == nil { return now &+ Self.fallbackPollMillis * 1_000_000 }
        return busy ? nextScan : nil
    }

    func interests(into fds: inout [pollfd]) {
        fds.append(pollfd(fd: wakeup?.fd ?? -1, events: Int16(POLLIN), revents: 0))
        polled.removeAll(keepingCapacity: true)
        for pool in pools.values {
            for connection in pool.connections where connection.interest != 0 {
                fds.append(pollfd(fd: connection.fd, events: connection.interest, revents: 0))
                polled.append(connection)
            }
        }
    }

    func handle(_ events: ArraySlice<pollfd>) {
        let first = events.startIndex
        if events[first].revents != 0 { wakeup?.consume() }
        for (offset, connection) in polled.enumerated() {
            let revents = events[first + 1 + offset].revents
            if revents != 0, connection.state != .closed { connection.handle(events: revents) }
        }
    }

    var isBusy: Bool { !isEnded && pools.values.contains { $0.isBusy } }

    func end() {
        guard !isEnded else { return }
        isEnded = true
        _ = inbox.close()
        var late: [H2Exchange] = []
        inbox.take(into: &late)
        let shutdown = TransportError(kind: .shutdown, message: "transport shut down")
        for exchange in late { exchange.finish(.failure(shutdown)) }
        for pool in pools.values { pool.close(with: shutdown) }
        pools.removeAll()
        headerBlocks.removeAll()
        PollLoop.current?.detach(owner)
        ended(self)
    }

    /// Finds (or builds) the request's header block and queues it on its origin's pool.
    private func route(_ exchange: H2Exchange) {
        let request = exchange.request
        let block: H2HeaderBlock
        if let known = headerBlocks.first(where: { $0.url == request.url && $0.lines == request.headers && $0.method == request.method }) {
            block = known
        } else {
            guard let made = H2HeaderBlock(url: request.url, lines: request.headers, method: request.method) else {
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
            pool = H2Pool(origin: block.origin, engine: self)
            pools[block.origin] = pool
        }
        pool.enqueue(exchange)
    }
}
