/// The connections to one origin and the requests waiting for a stream on one of them. Opens
/// another connection while the waiting requests do not fit the free streams (up to
/// `maxConnectionsPerOrigin`), and fails the waiting requests when the last connection attempt
/// fails, or at once when an attempt fails TLS verification (every other attempt would too).
/// After a failed attempt, reconnects back off (`reconnectDelay`) and probe one connection at a
/// time until one is ready; a request arriving while no connection is alive and the backoff
/// runs fails at once with the last attempt's error, rather than waiting or opening another.
/// Its engine's thread only.
final class H2Pool {
    let origin: H2Origin
    unowned let engine: H2Engine
    private(set) var connections: [H2Connection] = []
    private var waiting: [H2Exchange] = []
    private var waitingHead = 0
    /// Connection attempts that failed since the last one that became ready.
    private var failedAttempts = 0
    /// No new connection before this instant (`H2Clock`), after a failed attempt.
    private var reconnectAt: UInt64 = 0
    /// The last failed attempt's error, given to requests that arrive during the backoff.
    private var lastFailure: TransportError?

    /// The wait before the next attempt after `failures` failed ones in a row: 100 ms doubling
    /// up to 10 s.
    static func reconnectDelay(afterFailures failures: Int) -> UInt64 {
        let shift = min(max(failures - 1, 0), 7)
        return min(100_000_000 << UInt64(shift), 10_000_000_000)
    }

    init(origin: H2Origin, engine: H2Engine) {
        self.origin = origin
        self.engine = engine
    }

    var waitingCount: Int { waiting.count - waitingHead }

    /// True while a request waits, a stream is open or a connection is being set up.
    var isBusy: Bool { waitingCount > 0 || connections.contains { $0.isConnecting || !$0.streams.isEmpty } }

    func enqueue(_ exchange: H2Exchange) { waiting.append(exchange) }

    /// A request a connection gave back unprocessed (GOAWAY, refused stream): it waits again.
    func requeue(_ exchange: H2Exchange) {
        engine.shared.requestsRequeued.wrappingAdd(1, ordering: .relaxed)
        waiting.append(exchange)
    }

    /// Told by a connection that it is ready: the origin answers, the backoff ends.
    func connectionReady() {
        failedAttempts = 0
        reconnectAt = 0
        lastFailure = nil
    }

    /// Starts waiting requests on connections with free streams and opens connections for the rest.
    func pump() {
        if waitingCount > 0, let lastFailure, !connections.contains(where: { $0.state != .closed }), H2Clock.now() < reconnectAt {
            failWaiting(lastFailure)
        }
        if waitingCount > 0 {
            for connection in connections where connection.acceptsStreams {
                var started = false
                while waitingHead < waiting.count, connection.acceptsStreams, connection.freeSlots > 0 {
                    let exchange = waiting[waitingHead]
                    waitingHead += 1
                    if !exchange.isFinished, connection.start(exchange) { started = true }
                }
                if started { connection.flush() }
            }
        }
        compactWaiting()
        connections.removeAll { $0.state == .closed }
        openConnectionsIfNeeded()
    }

    private func openConnectionsIfNeeded() {
        guard waitingCount > 0, failedAttempts == 0 || H2Clock.now() >= reconnectAt else { return }
        var live = 0
        var pendingCapacity = 0
        var connecting = 0
        for connection in connections {
            if connection.state != .closed, connection.goawayLastStreamID == nil { live += 1 }
            if connection.isConnecting {
                pendingCapacity += engine.shared.streamsPerConnection
                connecting += 1
            }
        }
        // After a failure, one probe at a time until a connection is ready again.
        let maxConnecting = failedAttempts > 0 ? 1 : Int.max
        while waitingCount > pendingCapacity, live < engine.shared.maxConnectionsPerOrigin, connecting < maxConnecting {
            let connection = H2Connection(pool: self, connectDeadline: H2Clock.now() &+ engine.shared.connectTimeout)
            connections.append(connection)
            engine.shared.connectionsOpened.wrappingAdd(1, ordering: .relaxed)
            connection.open()
            live += 1
            if connection.isConnecting {
                pendingCapacity += engine.shared.streamsPerConnection
                connecting += 1
            }
        }
    }

    /// Told by a connection that it closed; a failed attempt with no other connection to wait
    /// for fails the waiting requests with its error.
    func connectionClosed(_ connection: H2Connection, error: TransportError, wasReady: Bool) {
        guard !wasReady, error.kind != .shutdown else { return }
        failedAttempts += 1
        lastFailure = error
        reconnectAt = H2Clock.now() &+ Self.reconnectDelay(afterFailures: failedAttempts)
        let othersAlive = connections.contains { $0 !== connection && $0.state != .closed }
        if error.kind == .tls || !othersAlive { failWaiting(error) }
    }

    /// Times out waiting requests and connects, and requests in flight, past their deadlines.
    func expire(now: UInt64) {
        var expired = false
        for index in waitingHead..<waiting.count where now >= waiting[index].deadline {
            waiting[index].finish(.failure(engine.shared.timeoutError))
            expired = true
        }
        if expired {
            waiting = waiting[waitingHead...].filter { !$0.isFinished }
            waitingHead = 0
        }
        for connection in connections { connection.expire(now: now) }
    }

    /// Fails everything with `error` and closes every connection (shutdown).
    func close(with error: TransportError) {
        failWaiting(error)
        for connection in connections { connection.fail(error, requeue: false) }
        failWaiting(error)
        connections.removeAll()
    }

    private func failWaiting(_ error: TransportError) {
        let failed = waiting[waitingHead...]
        waiting = []
        waitingHead = 0
        for exchange in failed { exchange.finish(.failure(error)) }
    }

    private func compactWaiting() {
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead > 1024, waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }
}
