import CNGHTTP2
import Glibc

/// One client HTTP/2 connection of a pool: a non-blocking socket (trying each resolved address
/// in turn), TLS over memory BIOs for https, and an nghttp2 client session whose streams carry
/// the pool's requests. Its engine's thread only.
///
/// Failures before the connection is ready (connect, TLS, `connectTimeout`) go to the pool,
/// which fails its waiting requests when no other connection can take them; failures after it
/// fail the streams in flight with `.connectionLost`, except those a GOAWAY declared
/// unprocessed, which go back to the pool to be sent on another connection.
final class H2Connection {
    enum State {
        case connecting
        case handshaking
        case ready
        case closed
    }

    /// How often one request may be moved to another connection after being refused unprocessed
    /// (REFUSED_STREAM, or above a GOAWAY's last stream). Safe to resend, since the server did
    /// not process it; bounded so that a server refusing everything cannot keep it forever. A
    /// burst of 100 streams on a connection the server closes after 25 needs a few rounds.
    static let maxRequeues = 8

    unowned let pool: H2Pool
    private(set) var state: State = .connecting
    private(set) var fd: Int32 = -1
    private let connectDeadline: UInt64
    private var addresses: [H2Socket.Address] = []
    private var nextAddress = 0
    private var lastConnectError = "no address"
    private var tls: H2TLSSession?
    var session: OpaquePointer?
    /// Requests in flight by stream id.
    var streams: [Int32: H2Exchange] = [:]
    /// Set by a GOAWAY: streams above it were not processed by the server.
    var goawayLastStreamID: Int32?
    /// When the PING sent after a request timeout left; cleared by its ACK.
    var pingSentAt: UInt64?
    /// Requests that timed out after being sent whole, answered once the connection's fate is
    /// known (`settleAwaitingFate`): the PING's ACK (the peer is there and read the stream's
    /// reset before it) or the connection's end, aborted so that the kernel drops the bytes it
    /// still held for it. Their retry cannot meet a late copy of them on this connection.
    private var awaitingFate: [H2Exchange] = []
    /// Set when nghttp2 refuses new streams (stream ids exhausted): no more requests here.
    private var refusesStreams = false
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    /// Frames of one flush waiting to be encrypted together (https).
    private var plaintext: [UInt8] = []

    init(pool: H2Pool, connectDeadline: UInt64) {
        self.pool = pool
        self.connectDeadline = connectDeadline
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        if fd >= 0 { Glibc.close(fd) }
    }

    var isConnecting: Bool { state == .connecting || state == .handshaking }
    /// Ready, not draining after a GOAWAY, able to open streams.
    var acceptsStreams: Bool { state == .ready && goawayLastStreamID == nil && !refusesStreams }

    /// Streams this connection may still open: the configured limit or the server's, if lower.
    var freeSlots: Int {
        guard let session else { return 0 }
        let remote = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return min(pool.engine.shared.streamsPerConnection, remote) - streams.count
    }

    /// poll(2) events wanted now.
    var interest: Int16 {
        switch state {
        case .connecting: return Int16(POLLOUT)
        case .closed: return 0
        case .handshaking, .ready: return Int16(POLLIN) | (outboundStart < outbound.count ? Int16(POLLOUT) : 0)
        }
    }

    /// Resolves the origin and starts connecting; an immediate failure closes the connection.
    func open() {
        switch H2Socket.resolve(host: pool.origin.host, port: pool.origin.port) {
        case .failure(let reason):
            fail(TransportError(kind: .connectFailed, message: reason.reason))
        case .success(let resolved):
            addresses = resolved
            connectNextAddress()
        }
    }

    private func connectNextAddress() {
        while nextAddress < addresses.count {
            let address = addresses[nextAddress]
            nextAddress += 1
            switch H2Socket.connect(address) {
            case .success(let socket):
                fd = socket
                return
            case .failure(let error):
                lastConnectError = error.reason
            }
        }
        fail(TransportError(kind: .connectFailed,
                            message: "connect to \(pool.origin.description) failed: \(lastConnectError)"))
    }

    /// Handles poll(2) results for `fd`.
    func handle(events: Int16) {
        if state == .connecting {
            if events & Int16(POLLOUT | POLLERR | POLLHUP) != 0 { finishConnect() }
            return
        }
        if events & Int16(POLLOUT) != 0 { sendOutbound() }
        if state != .closed, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readAvailable() }
    }

    private func finishConnect() {
        let error = H2Socket.connectError(fd)
        guard error == 0 else {
            lastConnectError = H2Socket.describe(error)
            Glibc.close(fd)
            fd = -1
            connectNextAddress()
            return
        }
        guard pool.origin.tls else {
            becomeReady()
            return
        }
        let context = pool.engine.shared.tlsContext
        if let problem = context.setupError {
            fail(TransportError(kind: .tls, message: problem))
            return
        }
        guard let session = H2TLSSession(context: context, host: pool.origin.host) else {
            fail(TransportError(kind: .tls, message: "cannot create a TLS session"))
            return
        }
        tls = session
        state = .handshaking
        stepHandshake()
    }

    private func stepHandshake() {
        guard let tls else { return }
        let step = tls.handshake()
        tls.drain(into: &outbound)
        switch step {
        case .done:
            becomeReady()
            if state == .ready { readPlaintext() }
        case .wantMore:
            sendOutbound()
        case .failed(let message):
            fail(TransportError(kind: .tls, message: "\(pool.origin.description): \(message)"))
        }
    }

    private func becomeReady() {
        guard let created = H2Connection.makeSession(for: self) else {
            fail(TransportError(kind: .other, message: "cannot create an HTTP/2 session"))
            return
        }
        session = created
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        state = .ready
        pool.connectionReady()
        flush()
    }

    /// Opens a stream for `exchange`; false (the request goes back to the pool) when nghttp2
    /// refuses one.
    func start(_ exchange: H2Exchange) -> Bool {
        guard let session, let headers = exchange.headers else { return false }
        exchange.bodySent = 0
        let id: Int32
        if exchange.request.body.isEmpty {
            id = headers.withFields { nghttp2_submit_request(session, nil, $0, $1, nil, nil) }
        } else {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil),
                                                 read_callback: H2Connection.readBody)
            id = headers.withFields { nghttp2_submit_request(session, nil, $0, $1, &provider, nil) }
        }
        guard id > 0 else {
            refusesStreams = true
            pool.requeue(exchange)
            return false
        }
        streams[id] = exchange
        return true
    }

    private func readAvailable() {
        let buffer = pool.engine.readBuffer
        for _ in 0..<16 {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 {
                received(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                if state == .closed { return }
                continue
            }
            if n == 0 {
                peerClosed()
                return
            }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { break }
            lose("read failed: \(H2Socket.describe(errno))")
            return
        }
        flush()
        closeIfFinished()
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard let tls else {
            deliver(bytes)
            return
        }
        tls.feed(bytes)
        if state == .handshaking {
            stepHandshake()
        } else {
            readPlaintext()
        }
    }

    private func readPlaintext() {
        guard let tls else { return }
        let buffer = pool.engine.readBuffer
        while state == .ready {
            guard let n = tls.read(into: buffer) else {
                peerClosed()
                return
            }
            if n == 0 { return }
            deliver(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) {
        guard let session, let base = bytes.baseAddress else { return }
        let n = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if n < 0 { lose("HTTP/2 protocol error: " + String(cString: nghttp2_strerror(Int32(n)))) }
    }

    private func peerClosed() {
        if state == .ready {
            lose("connection closed by \(pool.origin.description)")
        } else {
            fail(TransportError(kind: .connectFailed, message: "\(pool.origin.description) closed the connection during the TLS handshake"))
        }
    }

    private func lose(_ message: String) {
        fail(TransportError(kind: state == .ready ? .connectionLost : .connectFailed, message: message))
    }

    /// Closes a connection whose peer is gone with a reset (SO_LINGER 0): the kernel drops what
    /// it still holds for it instead of retransmitting it once the route is back, so a request
    /// that timed out here cannot reach FCM after its retry did.
    private func abort(_ message: String) {
        if fd >= 0 {
            var now = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, socklen_t(MemoryLayout<linger>.size))
        }
        lose(message)
    }

    /// The PING's ACK came: the peer read the resets sent before it, so the requests that timed
    /// out are answered (possibly delivered, as they may have been processed).
    func pingAnswered() {
        pingSentAt = nil
        settleAwaitingFate()
    }

    private func settleAwaitingFate() {
        guard !awaitingFate.isEmpty else { return }
        let settled = awaitingFate
        awaitingFate = []
        for exchange in settled { exchange.finishInterrupted(pool.engine.shared.sentTimeoutError) }
    }

    /// Moves nghttp2's pending frames to the socket; for https the frames of one pass are
    /// encrypted together (one SSL_write, full-size records) instead of one record per frame.
    func flush() {
        guard state == .ready, let session else { return }
        var pending = tls == nil ? outbound.count - outboundStart : plaintext.count + outbound.count - outboundStart
        while pending < 65_536 {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                lose("HTTP/2 error: " + String(cString: nghttp2_strerror(Int32(n))))
                return
            }
            guard n > 0, let data else { break }
            let chunk = UnsafeBufferPointer(start: data, count: n)
            if tls == nil { outbound.append(contentsOf: chunk) } else { plaintext.append(contentsOf: chunk) }
            pending += n
        }
        if let tls, !plaintext.isEmpty {
            let written = plaintext.withUnsafeBytes { tls.write($0) }
            plaintext.removeAll(keepingCapacity: true)
            guard written else {
                lose("TLS write failed")
                return
            }
            tls.drain(into: &outbound)
        }
        sendOutbound()
    }

    private func sendOutbound() {
        while outboundStart < outbound.count {
            let n = outbound.withUnsafeBytes {
                send(fd, $0.baseAddress! + outboundStart, $0.count - outboundStart, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                outboundStart += n
                continue
            }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
            lose("send failed: \(H2Socket.describe(errno))")
            return
        }
        if outboundStart == outbound.count {
            outbound.removeAll(keepingCapacity: true)
            outboundStart = 0
        } else if outboundStart > 65_536 {
            outbound.removeFirst(outboundStart)
            outboundStart = 0
        }
    }

    /// Closes a connection nghttp2 is done with (after a GOAWAY once its streams finished).
    private func closeIfFinished() {
        guard state == .ready, let session, outboundStart == outbound.count else { return }
        let finished = nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
        if finished || (goawayLastStreamID != nil && streams.isEmpty) {
            lose("connection closed after GOAWAY")
        }
    }

    /// Fails what outlived its deadline: the connect (`connectTimeout`) or requests in flight
    /// (each stream is reset; the connection stays usable). A timeout also sends a PING: a
    /// connection whose peer does not answer it within `pingTimeout` is dead (a black-holed
    /// route, a half-open socket) and is aborted, so later requests get a new one. A request
    /// sent whole is answered (`TRANSPORT_TIMEOUT_AFTER_SEND`) only then, or at the PING's ACK.
    func expire(now: UInt64) {
        if isConnecting, now >= connectDeadline {
            fail(TransportError(kind: .connectFailed, message: "connect to \(pool.origin.description) timed out"))
            return
        }
        guard state == .ready, let session else { return }
        if let sent = pingSentAt, now &- sent >= pool.engine.shared.pingTimeout {
            abort("no answer to PING from \(pool.origin.description)")
            return
        }
        guard !streams.isEmpty else { return }
        var expired: [Int32] = []
        for (id, exchange) in streams where now >= exchange.deadline { expired.append(id) }
        guard !expired.isEmpty else { return }
        for id in expired {
            guard let exchange = streams.removeValue(forKey: id) else { continue }
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
            // Its body all handed to the stream: FCM may have it whole (possibly delivered), and
            // its bytes may still be on their way: answered once the PING tells.
            let whole = exchange.bodySent >= exchange.request.body.count
            if whole, exchange.status == 0 {
                awaitingFate.append(exchange)
            } else {
                exchange.finishInterrupted(whole ? pool.engine.shared.sentTimeoutError : pool.engine.shared.timeoutError)
            }
        }
        if pingSentAt == nil {
            pingSentAt = now
            nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
        }
        flush()
    }

    /// Closes the connection: streams in flight fail with `error`, or go back to the pool when a
    /// GOAWAY said they were not processed (unless `requeue` is false, at shutdown).
    func fail(_ error: TransportError, requeue: Bool = true) {
        guard state != .closed else { return }
        let wasReady = state == .ready
        state = .closed
        let lost = streams
        streams = [:]
        if let session {
            self.session = nil
            nghttp2_session_del(session)
        }
        tls = nil
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        outbound = []
        outboundStart = 0
        settleAwaitingFate()
        for id in lost.keys.sorted() {
            guard let exchange = lost[id] else { continue }
            let unprocessed = requeue && goawayLastStreamID.map { id > $0 } == true
            if !(unprocessed && sendElsewhere(exchange)) { exchange.finishInterrupted(error) }
        }
        pool.connectionClosed(self, error: error, wasReady: wasReady)
    }

    /// Gives a request the server did not process back to the pool, to go out on another
    /// connection: only while it has no answer and fewer than `maxRequeues` tries; false otherwise.
    func sendElsewhere(_ exchange: H2Exchange) -> Bool {
        guard exchange.status == 0, exchange.requeues < Self.maxRequeues else { return false }
        exchange.requeues += 1
        pool.requeue(exchange)
        return true
    }
}
