/// The connections to one origin and the requests waiting for a stream on one of them. Opens
/// another connection while the waiting requests do not fit the free streams (up to
/// `maxConnectionsPerOrigin`), and fails the waiting requests when the last connection attempt
/// fails. Loop thread only.
final class H2Pool {
    let origin: H2Origin
    unowned let loop: H2Loop
    private(set) var connections: [H2Connection] = []
    private var waiting: [H2Exchange] = []
    private var waitingHead = 0

    init(origin: H2Origin, loop: H2Loop) {
        self.origin = origin
        self.loop = loop
    }

    var waitingCount: Int { waiting.count - waitingHead }

    /// True while a request waits, a stream is open or a connection is being set up.
    var isBusy: Bool { waitingCount > 0 || connections.contains { $0.isConnecting || !$0.streams.isEmpty } }

    func enqueue(_ exchange: H2Exchange) { waiting.append(exchange) }

    /// A request a connection gave back unprocessed (GOAWAY, refused stream): it waits again.
    func requeue(_ exchange: H2Exchange) {
        loop.requestsRequeued.wrappingAdd(1, ordering: .relaxed)
        waiting.append(exchange)
    }

    /// Starts waiting requests on connections with free streams and opens connections for the rest.
    func pump() {
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
        guard waitingCount > 0 else { return }
        var live = 0
        var pendingCapacity = 0
        for connection in connections {
            if connection.state != .closed, connection.goawayLastStreamID == nil { live += 1 }
            if connection.isConnecting { pendingCapacity += loop.streamsPerConnection }
        }
        while waitingCount > pendingCapacity, live < loop.maxConnectionsPerOrigin {
            let connection = H2Connection(pool: self, connectDeadline: H2Clock.now() &+ loop.connectTimeout)
            connections.append(connection)
            loop.connectionsOpened.wrappingAdd(1, ordering: .relaxed)
            connection.open()
            live += 1
            if connection.isConnecting { pendingCapacity += loop.streamsPerConnection }
        }
    }

    /// Told by a connection that it closed; a failed attempt with no other connection to wait
    /// for fails the waiting requests with its error.
    func connectionClosed(_ connection: H2Connection, error: TransportError, wasReady: Bool) {
        guard !wasReady else { return }
        let othersAlive = connections.contains { $0 !== connection && $0.state != .closed }
        if !othersAlive { failWaiting(error) }
    }

    /// Times out waiting requests and connects, and requests in flight, past their deadlines.
    func expire(now: UInt64) {
        var expired = false
        for index in waitingHead..<waiting.count where now >= waiting[index].deadline {
            waiting[index].finish(.failure(loop.timeoutError))
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
