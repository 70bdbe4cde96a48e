import COpenSSL
import CRabbitMQ
import FoundationEssentials
import Glibc

/// AMQP method ids (class << 16 | method) that librabbitmq defines as casted macros.
enum AMQPMethod {
    static let connectionClose: UInt32 = 0x000A_0032
    static let connectionCloseOK: UInt32 = 0x000A_0033
    static let connectionBlocked: UInt32 = 0x000A_003C
    static let connectionUnblocked: UInt32 = 0x000A_003D
    static let channelClose: UInt32 = 0x0014_0028
    static let channelCloseOK: UInt32 = 0x0014_0029
    static let basicCancel: UInt32 = 0x003C_001E
    static let basicCancelOK: UInt32 = 0x003C_001F
    static let basicPublish: UInt32 = 0x003C_0028
    static let basicReturn: UInt32 = 0x003C_0032
    static let basicDeliver: UInt32 = 0x003C_003C
    static let basicGetOK: UInt32 = 0x003C_0047
    static let basicAck: UInt32 = 0x003C_0050
    static let basicNack: UInt32 = 0x003C_0078
}

/// What one read from the socket produced, already copied out of librabbitmq's buffers.
enum IncomingFrame {
    case deliver(Delivery)
    case ack(tag: UInt64, multiple: Bool)
    case nack(tag: UInt64, multiple: Bool)
    /// basic.return of a mandatory publish no queue took, with the returned message's body.
    case returned(replyCode: UInt16, replyText: String, exchange: String, routingKey: String, body: Data)
    case cancelledByServer(consumerTag: String)
    case channelClosed(channel: UInt16, AMQPError)
    /// connection.blocked: a resource alarm; the broker stops reading this connection's publishes.
    case blocked(reason: String)
    /// connection.unblocked: the alarm cleared.
    case unblocked
    case other(method: UInt32)
}

/// One librabbitmq connection. NOT thread-safe and never shared: it lives on the single thread
/// that created it, or on the loop it was handed to once, whole (`LoopPublisher`). All calls
/// block that thread only.
final class AMQPConnection {
    let settings: AMQPSettings
    private let state: amqp_connection_state_t
    private(set) var isOpen = false
    /// Socket descriptor, for `poll` together with a wake-up descriptor.
    private(set) var socketFD: Int32 = -1
    /// A body declared larger than this is never held whole: its first `oversizeKept` bytes are
    /// kept and the rest read and dropped frame by frame (`Delivery.declaredBodySize` says how
    /// large it was). nil: every body whole.
    var bodyLimit: Int?
    /// What is kept of a body over `bodyLimit`: enough to identify the job in a dead letter.
    static let oversizeKept = 64 << 10
    /// The node of `settings.nodes` this connection is open to.
    let nodeIndex: Int
    /// True when that node is reached over TLS (read once: `settings.nodes` builds an array).
    private let isTLS: Bool
    /// That node's URL, password redacted.
    var redactedURL: String { settings.redactedURL(of: settings.nodes[nodeIndex]) }
    /// What the broker can do, from the version it announced (connection.start).
    private(set) var brokerFeatures = BrokerFeatures.baseline

    /// Opens TCP (or TLS) to the first node that answers (`AMQPNodeRotation` gives the order),
    /// logs in with client properties, opens channel 1.
    init(settings: AMQPSettings) throws(AMQPError) {
        self.settings = settings
        let nodes = settings.nodes
        var failures: [AMQPError] = []
        for index in AMQPNodeRotation.order(nodes) {
            guard let state = amqp_new_connection() else { throw .connectionFailed("amqp_new_connection failed") }
            do {
                let descriptor = try Self.open(state, settings: settings, node: nodes[index])
                self.state = state
                socketFD = descriptor
                nodeIndex = index
                isTLS = nodes[index].tls != nil
                isOpen = true
                if let properties = amqp_get_server_properties(state) {
                    brokerFeatures = BrokerFeatures(serverVersion: CDecode.table(properties.pointee)["version"]?.stringValue)
                }
                AMQPNodeRotation.opened(index, of: nodes)
                return
            } catch {
                amqp_destroy_connection(state)
                failures.append(error)
            }
        }
        throw Self.combined(failures)
    }

    deinit {
        close()
        amqp_destroy_connection(state)
    }

    /// One failure as it is; several (one per node) as one error of the first one's kind.
    private static func combined(_ failures: [AMQPError]) -> AMQPError {
        guard failures.count > 1 else { return failures.first ?? .connectionFailed("no broker node to connect to") }
        let text = "no node of the cluster answered: " + failures.map(\.message).joined(separator: "; ")
        return failures[0].code == .loginFailed ? .loginFailed(text) : .connectionFailed(text)
    }

    /// The connection is gone (not closed by us): the next connection tries another node first.
    private func markLost() {
        if isOpen { AMQPNodeRotation.lost(nodeIndex, of: settings.nodes) }
        isOpen = false
    }

    /// Opens the socket to `node`, logs in and opens channel 1; returns the socket descriptor.
    private static func open(_ state: amqp_connection_state_t, settings: AMQPSettings,
                             node: AMQPSettings.Node) throws(AMQPError) -> Int32 {
        let url = settings.redactedURL(of: node)
        let socket: OpaquePointer?
        if let tls = node.tls {
            socket = amqp_ssl_socket_new(state)
            guard let socket else { throw .connectionFailed("cannot create a TLS socket") }
            amqp_ssl_socket_set_verify_peer(socket, tls.verifyPeer ? 1 : 0)
            amqp_ssl_socket_set_verify_hostname(socket, tls.verifyHostname ? 1 : 0)
            if let ca = tls.caFile {
                if amqp_ssl_socket_set_cacert(socket, ca) != AMQP_STATUS_OK.rawValue {
                    throw .connectionFailed("cannot load the CA file \(ca)")
                }
            } else if let context = amqp_ssl_socket_get_context(socket) {
                // librabbitmq 0.11 never loads the system trust store by itself.
                SSL_CTX_set_default_verify_paths(OpaquePointer(context))
            }
            if let context = amqp_ssl_socket_get_context(socket) {
                // Publishes are written from a buffer that grows while a write waits (0090).
                _ = pc_ssl_ctx_accept_moving_write_buffer(OpaquePointer(context))
            }
        } else {
            socket = amqp_tcp_socket_new(state)
        }
        guard let socket else { throw .connectionFailed("cannot create a socket") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        let status = amqp_socket_open_noblock(socket, node.host, Int32(node.port), &timeout)
        guard status == AMQP_STATUS_OK.rawValue else {
            throw .connectionFailed("cannot connect to \(url): \(Self.statusText(status))")
        }
        // Bounded before the first byte of the handshake, again once the heartbeat is agreed.
        Self.boundUnacknowledgedData(amqp_get_sockfd(state), heartbeatSeconds: settings.heartbeatSeconds)
        let arena = CArena()
        var properties = arena.table([
            "connection_name": .string(settings.connectionName),
            "product": "push-connector",
            "platform": "Swift",
            "capabilities": .table([
                "consumer_cancel_notify": true,
                "publisher_confirms": true,
                "basic.nack": true,
                "connection.blocked": true,
                "authentication_failure_close": true,
            ]),
        ])
        let reply = pc_amqp_login_plain_with_properties(
            state, settings.vhost, 0, Int32(settings.frameMax), Int32(settings.heartbeatSeconds), &properties,
            settings.user, settings.password)
        withExtendedLifetime(arena) {}
        if reply.reply_type != AMQP_RESPONSE_NORMAL {
            throw .loginFailed("login to \(url) refused: \(describe(reply))")
        }
        Self.boundUnacknowledgedData(amqp_get_sockfd(state), heartbeatSeconds: Int(amqp_get_heartbeat(state)))
        _ = amqp_channel_open(state, 1)
        let opened = amqp_get_rpc_reply(state)
        guard opened.reply_type == AMQP_RESPONSE_NORMAL else {
            throw .connectionFailed("channel.open on \(url): \(describe(opened))")
        }
        return amqp_get_sockfd(state)
    }

    func openChannel(_ channel: UInt16) throws(AMQPError) {
        _ = amqp_channel_open(state, channel)
        try check("channel.open")
    }

    // MARK: RPC helpers

    /// Throws when the last synchronous RPC did not succeed.
    func check(_ what: String) throws(AMQPError) {
        let reply = amqp_get_rpc_reply(state)
        try check(reply, what)
    }

    func check(_ reply: amqp_rpc_reply_t, _ what: String) throws(AMQPError) {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL: return
        case AMQP_RESPONSE_SERVER_EXCEPTION where reply.reply.id == AMQPMethod.channelClose:
            let close = reply.reply.decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            var ok = amqp_channel_close_ok_t(dummy: 0)
            _ = amqp_send_method(state, 1, AMQPMethod.channelCloseOK, &ok)
            throw .channelClosed("\(what): \(CDecode.string(close.reply_text))", replyCode: close.reply_code)
        default:
            markLost()
            throw .connectionLost("\(what): \(Self.describe(reply))")
        }
    }

    private static func describe(_ reply: amqp_rpc_reply_t) -> String {
        switch reply.reply_type {
        case AMQP_RESPONSE_NONE: return "missing RPC reply"
        case AMQP_RESPONSE_LIBRARY_EXCEPTION: return Self.statusText(reply.library_error)
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            if reply.reply.id == AMQPMethod.connectionClose {
                let close = reply.reply.decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
                return "server closed the connection: \(close.reply_code) \(CDecode.string(close.reply_text))"
            }
            if reply.reply.id == AMQPMethod.channelClose {
                let close = reply.reply.decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
                return "server closed the channel: \(close.reply_code) \(CDecode.string(close.reply_text))"
            }
            return "server exception (method 0x\(String(reply.reply.id, radix: 16)))"
        default: return "unknown reply"
        }
    }

    static func statusText(_ status: Int32) -> String {
        String(cString: amqp_error_string2(status))
    }

    var raw: amqp_connection_state_t { state }

    /// Holds back partial TCP segments while `on` (TCP_CORK): the frames of many publishes written
    /// in a row leave in as few segments as fit, instead of one segment (and one wake-up of the
    /// broker) per publish. Turning it off sends what is held. Best effort: a failure changes
    /// only how the bytes are packed.
    func cork(_ on: Bool) {
        guard socketFD >= 0 else { return }
        var value: Int32 = on ? 1 : 0
        _ = setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// True when publishes may go out as gathered frames (`PublishFrames`) written straight to
    /// the socket: plain TCP always; TLS through librabbitmq's SSL socket when the library's
    /// socket layout is one we know (`tlsFramesSupported`).
    var writesFramesDirectly: Bool {
        socketFD >= 0 && (!isTLS || Self.tlsFramesSupported)
    }

    /// True when librabbitmq's socket object has the layout and the partial-write TLS mode the
    /// TLS write relies on (0.11 to 0.16); with another version TLS publishes go frame by frame
    /// (`amqp_basic_publish`), on the publisher thread.
    static let tlsFramesSupported = pc_amqp_socket_layout_known() != 0

    /// What a write the socket did not take whole waits for (`POLLOUT`; `POLLIN` when TLS must
    /// read before it can write on). Read after `writeAvailable` returned short.
    private(set) var writeWaitsFor = Int16(POLLOUT)

    /// True while TLS holds part of a record the socket has not taken (a write that stopped
    /// with `WANT_WRITE`/`WANT_READ`, even one that took 0 bytes of the caller's): until it is
    /// taken up again and finishes nothing else may be written on the connection, not even the
    /// heartbeat librabbitmq writes from a read (OpenSSL would refuse it and the connection would
    /// be lost). Always false over plain TCP, where the caller's offset says where frames end.
    private(set) var tlsRecordPending = false

    /// The frame size negotiated with the broker.
    var frameMax: Int { Int(amqp_get_frame_max(state)) }

    /// How long a peer may leave what this side sent unacknowledged before the connection is
    /// given up: two heartbeats (at least 4 s), or 60 s with heartbeats off.
    static func stallLimitSeconds(heartbeatSeconds: Int) -> Int {
        heartbeatSeconds > 0 ? max(4, 2 * heartbeatSeconds) : 60
    }

    /// The kernel aborts the connection (ETIMEDOUT) once bytes it sent stay unacknowledged for
    /// `stallLimitSeconds` (TCP_USER_TIMEOUT; zero-window probes count too). librabbitmq waits
    /// for a full socket in poll(2) without a deadline on every send (publish, ack, heartbeat,
    /// RPC), and its heartbeat check runs only in reads: behind a node that drops packets without
    /// a reset, a full socket held its thread until the kernel gave up retransmitting (~15 min).
    /// With the bound every such wait ends in POLLERR, the send fails and the connection is lost:
    /// the next one tries another node.
    static func boundUnacknowledgedData(_ descriptor: Int32, heartbeatSeconds: Int) {
        guard descriptor >= 0 else { return }
        var milliseconds = UInt32(stallLimitSeconds(heartbeatSeconds: heartbeatSeconds) * 1000)
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, &milliseconds, socklen_t(MemoryLayout<UInt32>.size))
    }

    /// Writes gathered publishes whole, waiting while the socket is full (as librabbitmq does)
    /// but not longer than `stallLimitSeconds` without a byte taken; a failure or a stall ends
    /// the connection. Only when `writesFramesDirectly`.
    func write(_ frames: PublishFrames) throws(AMQPError) {
        var offset = 0
        let limit = Duration.seconds(Self.stallLimitSeconds(heartbeatSeconds: Int(amqp_get_heartbeat(state))))
        var progressed = ContinuousClock.now
        while offset < frames.bytes.count {
            let written = try writeAvailable(frames.bytes, from: offset)
            offset += written
            if written > 0 { progressed = ContinuousClock.now }
            if offset < frames.bytes.count {
                guard ContinuousClock.now - progressed < limit else {
                    markLost()
                    throw .connectionLost("\(redactedURL) took no byte for \(limit): the connection is given up")
                }
                var entry = pollfd(fd: socketFD, events: writeWaitsFor, revents: 0)
                _ = poll(&entry, 1, 1000)
            }
        }
    }

    /// Writes what the socket takes at once of `bytes[offset...]`, never waiting; returns how
    /// many bytes went out (0 when the socket is full; `writeWaitsFor` says for what). A failure
    /// ends the connection. Only when `writesFramesDirectly`; the caller must not let librabbitmq
    /// write (a heartbeat, from a read) while a frame is partly written, and over TLS must call
    /// again with the same bytes from the same offset (more may be appended; decision 0090).
    func writeAvailable(_ bytes: [UInt8], from offset: Int) throws(AMQPError) -> Int {
        writeWaitsFor = Int16(POLLOUT)
        if isTLS { return try writeAvailableTLS(bytes, from: offset) }
        let fd = socketFD
        let (written, failure): (Int, Int32?) = bytes.withUnsafeBytes { raw in
            var done = offset
            while done < raw.count {
                let n = send(fd, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                if n > 0 {
                    done += n
                    continue
                }
                if n < 0, errno == EINTR { continue }
                if n < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
                return (done - offset, n < 0 ? errno : EPIPE)
            }
            return (done - offset, nil)
        }
        if let failure {
            markLost()
            throw .connectionLost("publish failed: \(String(cString: strerror(failure)))")
        }
        return written
    }

    /// `writeAvailable` through librabbitmq's SSL socket (SSL_write in partial-write mode on its
    /// non-blocking socket, records of at most 16 KiB each).
    private func writeAvailableTLS(_ bytes: [UInt8], from offset: Int) throws(AMQPError) -> Int {
        guard let socket = amqp_get_socket(state) else {
            markLost()
            throw .connectionLost("publish failed: the connection has no socket")
        }
        var status = 0
        let written: Int = bytes.withUnsafeBytes { raw in
            var done = offset
            while done < raw.count {
                let n = pc_amqp_socket_send(socket, raw.baseAddress! + done, raw.count - done, 0)
                if n > 0 {
                    done += n
                    continue
                }
                if n == PC_AMQP_STATUS_NEEDWRITE || n == PC_AMQP_STATUS_NEEDREAD {
                    if n == PC_AMQP_STATUS_NEEDREAD { writeWaitsFor = Int16(POLLIN) }
                    tlsRecordPending = true
                    return done - offset
                }
                status = n < 0 ? n : Int(AMQP_STATUS_CONNECTION_CLOSED.rawValue)
                return done - offset
            }
            tlsRecordPending = false
            return done - offset
        }
        if status != 0 {
            markLost()
            throw .connectionLost("publish failed: \(Self.statusText(Int32(status)))")
        }
        return written
    }

    // MARK: frames

    /// True when frames are already buffered (a `poll` on the socket would not see them).
    var hasBufferedData: Bool {
        amqp_frames_enqueued(state) != 0 || amqp_data_in_buffer(state) != 0
    }

    /// Reads one frame, waiting at most `timeoutMicros` (0: only what is already there).
    /// Returns nil on timeout. Services heartbeats. Throws `.connectionLost` when the connection
    /// dies (the server's connection.close is answered first).
    /// With `keepEncoded`, a delivery also carries its properties in wire encoding
    /// (`Delivery.encodedProperties`, for byte-exact copies).
    func nextFrame(timeoutMicros: Int, keepEncoded: Bool = false) throws(AMQPError) -> IncomingFrame? {
        var frame = amqp_frame_t()
        var tv = timeval(tv_sec: timeoutMicros / 1_000_000, tv_usec: Int(timeoutMicros % 1_000_000))
        let status = amqp_simple_wait_frame_noblock(state, &frame, &tv)
        if status == AMQP_STATUS_TIMEOUT.rawValue { return nil }
        guard status == AMQP_STATUS_OK.rawValue else {
            markLost()
            throw .connectionLost("connection to \(redactedURL) lost: \(Self.statusText(status))")
        }
        guard frame.frame_type == UInt8(AMQP_FRAME_METHOD) else {
            return .other(method: 0)  // stray header/body (e.g. after a returned message we skipped)
        }
        let id = frame.payload.method.id
        let decoded = frame.payload.method.decoded!
        switch id {
        case AMQPMethod.basicDeliver:
            let m = decoded.assumingMemoryBound(to: amqp_basic_deliver_t.self).pointee
            let tag = m.delivery_tag, redelivered = m.redelivered != 0
            let exchange = CDecode.string(m.exchange), routingKey = CDecode.string(m.routing_key)
            let (properties, body, encoded, declared) = try readContent(channel: frame.channel, keepEncoded: keepEncoded,
                                                                        limit: bodyLimit)
            var delivery = Delivery(body: body, properties: properties, deliveryTag: tag,
                                    redelivered: redelivered, exchange: exchange, routingKey: routingKey,
                                    messageCount: nil, encodedProperties: encoded)
            delivery.declaredBodySize = declared
            return .deliver(delivery)
        case AMQPMethod.basicAck:
            let m = decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
            return .ack(tag: m.delivery_tag, multiple: m.multiple != 0)
        case AMQPMethod.basicNack:
            let m = decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
            return .nack(tag: m.delivery_tag, multiple: m.multiple != 0)
        case AMQPMethod.basicReturn:
            let m = decoded.assumingMemoryBound(to: amqp_basic_return_t.self).pointee
            let replyText = CDecode.string(m.reply_text), exchange = CDecode.string(m.exchange)
            let routingKey = CDecode.string(m.routing_key)
            let (_, body, _, _) = try readContent(channel: frame.channel)
            return .returned(replyCode: m.reply_code, replyText: replyText, exchange: exchange,
                             routingKey: routingKey, body: body)
        case AMQPMethod.basicCancel:
            let m = decoded.assumingMemoryBound(to: amqp_basic_cancel_t.self).pointee
            return .cancelledByServer(consumerTag: CDecode.string(m.consumer_tag))
        case AMQPMethod.channelClose:
            let m = decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            let error = AMQPError.channelClosed(CDecode.string(m.reply_text), replyCode: m.reply_code)
            var ok = amqp_channel_close_ok_t(dummy: 0)
            _ = amqp_send_method(state, frame.channel, AMQPMethod.channelCloseOK, &ok)
            return .channelClosed(channel: frame.channel, error)
        case AMQPMethod.connectionBlocked:
            let m = decoded.assumingMemoryBound(to: amqp_connection_blocked_t.self).pointee
            return .blocked(reason: CDecode.string(m.reason))
        case AMQPMethod.connectionUnblocked:
            return .unblocked
        case AMQPMethod.connectionClose:
            let m = decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            let text = CDecode.string(m.reply_text)
            var ok = amqp_connection_close_ok_t(dummy: 0)
            _ = amqp_send_method(state, 0, AMQPMethod.connectionCloseOK, &ok)
            markLost()
            throw .connectionLost("the broker closed the connection: \(text)", replyCode: m.reply_code)
        default:
            return .other(method: id)
        }
    }

    /// Reads the content header and body frames following basic.deliver / get-ok / return.
    /// With `keepEncoded`, also returns the properties re-encoded by librabbitmq from what it
    /// decoded (every table entry in wire order with its wire type): `publish(encodedProperties:)`
    /// sends them back unchanged. A body declared larger than `limit` is read to its end but
    /// only its first `oversizeKept` bytes are kept, the frames' memory given back as they are
    /// read; the last value is the declared size.
    func readContent(channel: UInt16, keepEncoded: Bool = false,
                     limit: Int? = nil) throws(AMQPError) -> (MessageProperties, Data, Data?, Int) {
        var frame = amqp_frame_t()
        var status = amqp_simple_wait_frame(state, &frame)
        guard status == AMQP_STATUS_OK.rawValue else {
            markLost()
            throw .connectionLost("reading a content header: \(Self.statusText(status))")
        }
        guard frame.frame_type == UInt8(AMQP_FRAME_HEADER) else {
            throw .protocolError("expected a content header, got frame type \(frame.frame_type)")
        }
        // The size comes from the wire: refuse absurd ones rather than trap or pre-allocate them.
        guard frame.payload.properties.body_size <= 512 << 20 else {
            markLost()
            throw .protocolError("a message body of \(frame.payload.properties.body_size) bytes is over the 512 MiB limit")
        }
        let size = Int(frame.payload.properties.body_size)
        let properties = CDecode.properties(
            frame.payload.properties.decoded.assumingMemoryBound(to: amqp_basic_properties_t.self).pointee)
        let encoded = keepEncoded ? try Self.encode(frame.payload.properties.decoded) : nil
        let oversize = limit.map { size > $0 } ?? false
        let kept = oversize ? Self.oversizeKept : size
        var body = Data(capacity: min(size, kept))
        var received = 0
        while received < size {
            status = amqp_simple_wait_frame(state, &frame)
            guard status == AMQP_STATUS_OK.rawValue else {
                markLost()
                throw .connectionLost("reading a message body: \(Self.statusText(status))")
            }
            guard frame.frame_type == UInt8(AMQP_FRAME_BODY) else {
                throw .protocolError("expected a body frame, got frame type \(frame.frame_type)")
            }
            let fragment = frame.payload.body_fragment
            received += fragment.len
            if body.count < kept, let bytes = fragment.bytes {
                body.append(bytes.assumingMemoryBound(to: UInt8.self), count: min(fragment.len, kept - body.count))
            }
            // Dropped bytes are not held either: the frame's buffer goes back now, not after
            // the whole message (nothing decoded from the pool is used past this point).
            if oversize { releaseBuffers() }
        }
        return (properties, body, encoded, size)
    }

    /// The wire encoding of decoded basic properties (librabbitmq's encoder; the buffer grows
    /// until they fit).
    private static func encode(_ decoded: UnsafeMutableRawPointer) throws(AMQPError) -> Data {
        var size = 4096
        while size <= 1 << 26 {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
            defer { buffer.deallocate() }
            let written = amqp_encode_properties(UInt16(AMQP_BASIC_CLASS), decoded, amqp_bytes_t(len: size, bytes: buffer))
            if written >= 0 { return Data(bytes: buffer, count: Int(written)) }
            size *= 4
        }
        throw .protocolError("message properties too large to re-encode")
    }

    /// Frees the memory of decoded frames; call between messages.
    func releaseBuffers() { amqp_maybe_release_buffers(state) }

    // MARK: publishing and settling

    func publish(channel: UInt16 = 1, exchange: String, routingKey: String, body: Data,
                 properties: MessageProperties, mandatory: Bool) throws(AMQPError) {
        let arena = CArena()
        var props = arena.properties(properties)
        let bodyBytes = arena.bytes(body)
        let status = amqp_basic_publish(state, channel, arena.bytes(exchange), arena.bytes(routingKey),
                                        mandatory ? 1 : 0, 0, &props, bodyBytes)
        withExtendedLifetime(arena) {}
        guard status == AMQP_STATUS_OK.rawValue else {
            markLost()
            throw .connectionLost("publish failed: \(Self.statusText(status))")
        }
    }

    /// Publishes with properties given in their wire encoding (from `Delivery.encodedProperties`),
    /// so that every header keeps its order and type and every property its exact value; the
    /// headers named in `droppingHeaders` are left out (the others keep their order).
    func publish(channel: UInt16 = 1, exchange: String, routingKey: String, body: Data,
                 encodedProperties: Data, droppingHeaders: Set<String> = [], mandatory: Bool) throws(AMQPError) {
        let arena = CArena()
        var pool = amqp_pool_t()
        init_amqp_pool(&pool, 4096)
        defer { empty_amqp_pool(&pool) }
        var decoded: UnsafeMutableRawPointer?
        let status: Int32 = encodedProperties.withUnsafeBytes { raw in
            amqp_decode_properties(UInt16(AMQP_BASIC_CLASS), &pool,
                                   amqp_bytes_t(len: raw.count, bytes: UnsafeMutableRawPointer(mutating: raw.baseAddress)), &decoded)
        }
        guard status == AMQP_STATUS_OK.rawValue, let decoded else {
            throw .protocolError("cannot decode stored message properties: \(Self.statusText(status))")
        }
        let properties = decoded.assumingMemoryBound(to: amqp_basic_properties_t.self)
        if !droppingHeaders.isEmpty, properties.pointee._flags & UInt32(AMQP_BASIC_HEADERS_FLAG) != 0,
           let entries = properties.pointee.headers.entries {
            var kept: Int32 = 0
            for index in 0..<Int(properties.pointee.headers.num_entries)
            where !droppingHeaders.contains(CDecode.string(entries[index].key)) {
                entries[Int(kept)] = entries[index]
                kept += 1
            }
            properties.pointee.headers.num_entries = kept
            if kept == 0 { properties.pointee._flags &= ~UInt32(AMQP_BASIC_HEADERS_FLAG) }
        }
        let sent = amqp_basic_publish(state, channel, arena.bytes(exchange), arena.bytes(routingKey), mandatory ? 1 : 0, 0,
                                      properties, arena.bytes(body))
        withExtendedLifetime(arena) {}
        guard sent == AMQP_STATUS_OK.rawValue else {
            markLost()
            throw .connectionLost("publish failed: \(Self.statusText(sent))")
        }
    }

    func ack(channel: UInt16 = 1, _ tag: UInt64, multiple: Bool) throws(AMQPError) {
        let status = amqp_basic_ack(state, channel, tag, multiple ? 1 : 0)
        guard status == AMQP_STATUS_OK.rawValue else { markLost(); throw .connectionLost("ack failed") }
    }

    func nack(channel: UInt16 = 1, _ tag: UInt64, multiple: Bool, requeue: Bool) throws(AMQPError) {
        let status = amqp_basic_nack(state, channel, tag, multiple ? 1 : 0, requeue ? 1 : 0)
        guard status == AMQP_STATUS_OK.rawValue else { markLost(); throw .connectionLost("nack failed") }
    }

    func reject(channel: UInt16 = 1, _ tag: UInt64, requeue: Bool) throws(AMQPError) {
        let status = amqp_basic_reject(state, channel, tag, requeue ? 1 : 0)
        guard status == AMQP_STATUS_OK.rawValue else { markLost(); throw .connectionLost("reject failed") }
    }

    /// Sends basic.cancel without waiting for cancel-ok (it arrives as a frame on the loop).
    func sendCancel(consumerTag: String) throws(AMQPError) {
        let arena = CArena()
        var cancel = amqp_basic_cancel_t(consumer_tag: arena.bytes(consumerTag), nowait: 0)
        let status = amqp_send_method(state, 1, AMQPMethod.basicCancel, &cancel)
        withExtendedLifetime(arena) {}
        guard status == AMQP_STATUS_OK.rawValue else { markLost(); throw .connectionLost("basic.cancel failed") }
    }

    /// Closes channel 1 and the connection politely (best effort), waiting at most `timeout`
    /// for each close-ok: a broker that stopped reading (a blocked connection, a hung node) must
    /// not hang the caller. `polite: false` skips the handshake (the socket is just dropped when
    /// the connection is destroyed; the broker cleans up as for a lost client).
    func close(timeout: Duration = .seconds(5), polite: Bool = true) {
        guard isOpen else { return }
        isOpen = false
        guard polite else { return }
        let (seconds, attoseconds) = timeout.components
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        _ = amqp_set_rpc_timeout(state, &tv)
        _ = amqp_channel_close(state, 1, Int32(AMQP_REPLY_SUCCESS))
        _ = amqp_connection_close(state, Int32(AMQP_REPLY_SUCCESS))
    }
}
