import CNGHTTP2

/// One request stream of an HTTP/2 connection.
final class H2Stream {
    var request = HTTPRequest()
    var tooLarge = false
    var responseBody: [UInt8] = []
    var responseOffset = 0
    /// Fault: the body stops here and the stream is reset (nil: the whole body).
    var cutAt: Int?
}

/// The server side of one HTTP/2 connection, framed by libnghttp2 (mem_recv / mem_send): collects
/// each stream's headers and body, asks the service, submits the answer (now or after the
/// emulated latency), and sends GOAWAY after N requests when that fault is on.
final class H2Session {
    private unowned let connection: ClientConnection
    private var session: OpaquePointer?
    private var streams: [Int32: H2Stream] = [:]
    private var requestsSeen = 0
    private var goawayLastStreamID: Int32?
    /// The highest stream processed so far: a GOAWAY names it as the last one.
    private var highestDispatchedStreamID: Int32 = 0

    init?(connection: ClientConnection) {
        self.connection = connection
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0 else { return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            let me = Unmanaged<H2Session>.fromOpaque(user).takeUnretainedValue()
            guard frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
                  frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
            me.beginStream(frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let user else { return 0 }
            let me = Unmanaged<H2Session>.fromOpaque(user).takeUnretainedValue()
            guard let stream = me.streams[frame.pointee.hd.stream_id] else { return 0 }
            let n = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
            let v = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
            switch n {
            case ":method": stream.request.method = v
            case ":path": stream.request.target = v
            case ":authority": stream.request.headers.append(("host", v))
            case ":scheme": break
            default: stream.request.headers.append((n, v))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
            guard let data, let user else { return 0 }
            let me = Unmanaged<H2Session>.fromOpaque(user).takeUnretainedValue()
            guard let stream = me.streams[streamID], !stream.tooLarge else { return 0 }
            if stream.request.body.count + length > HTTP1Session.maxBodyBytes { stream.tooLarge = true; return 0 }
            stream.request.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            let me = Unmanaged<H2Session>.fromOpaque(user).takeUnretainedValue()
            let type = frame.pointee.hd.type
            let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            if endStream, type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) {
                me.dispatch(frame.pointee.hd.stream_id)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, user in
            guard let user else { return 0 }
            Unmanaged<H2Session>.fromOpaque(user).takeUnretainedValue().streams[streamID] = nil
            return 0
        }
        guard nghttp2_session_server_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0 else { return nil }
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(connection.service.configuration.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
    }

    deinit { nghttp2_session_del(session) }

    /// Feeds received bytes; false on a fatal protocol error (the connection then closes).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let n = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        return n >= 0
    }

    /// Moves every frame nghttp2 has ready into the connection's outbound buffer.
    func produceOutput() {
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else { return }
            connection.enqueue(UnsafeRawBufferPointer(start: data, count: n))
        }
    }

    /// True when nothing more will be read or written (after GOAWAY, once streams are done).
    var isFinished: Bool {
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 { return true }
        return goawayLastStreamID != nil && streams.isEmpty && nghttp2_session_want_write(session) == 0
    }

    private func beginStream(_ streamID: Int32) {
        if let last = goawayLastStreamID, streamID > last {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_REFUSED_STREAM.rawValue)
            return
        }
        streams[streamID] = H2Stream()
    }

    private func dispatch(_ streamID: Int32) {
        guard let stream = streams[streamID] else { return }
        // Above a GOAWAY's last stream id nothing is processed (RFC 9113 §6.8): the client may
        // send it again elsewhere, so processing it too would deliver it twice.
        if let last = goawayLastStreamID, streamID > last {
            streams[streamID] = nil
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_REFUSED_STREAM.rawValue)
            return
        }
        requestsSeen += 1
        highestDispatchedStreamID = max(highestDispatchedStreamID, streamID)
        if let every = connection.service.configuration.goawayEveryRequests, every > 0,
           requestsSeen >= every, goawayLastStreamID == nil {
            // The last stream id covers every stream processed so far (they complete out of id
            // order); the ones opened and not yet complete above it are refused as they complete.
            goawayLastStreamID = highestDispatchedStreamID
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), highestDispatchedStreamID,
                                  NGHTTP2_NO_ERROR.rawValue, nil, 0)
        }
        let response: HTTPResponse = stream.tooLarge
            ? .json(413, "{\"error\":{\"code\":413,\"message\":\"Request body too large.\",\"status\":\"INVALID_ARGUMENT\"}}")
            : connection.service.handle(stream.request)
        if response.delay > .zero {
            connection.loop.schedule(after: response.delay) { [weak self] in
                guard let self, !self.connection.isClosed else { return }
                self.submit(response, on: streamID)
                self.connection.loop.onceAfterTimers(self.connection) { [weak connection = self.connection] in
                    connection?.produceAndFlush()
                }
            }
        } else {
            submit(response, on: streamID)
        }
    }

    private func submit(_ response: HTTPResponse, on streamID: Int32) {
        guard let stream = streams[streamID] else { return }
        stream.request.body = []
        stream.responseBody = response.body
        stream.cutAt = response.cut ? response.body.count / 2 : nil
        var fields: [(String, String)] = [(":status", String(response.status))]
        fields += response.headers
        fields.append(("content-length", String(response.body.count)))
        var storage: [UInt8] = []
        var ranges: [(Int, Int, Int, Int)] = []
        for (name, value) in fields {
            let nameStart = storage.count
            storage.append(contentsOf: name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            ranges.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart))
        }
        storage.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            var headers = ranges.map { r in
                nghttp2_nv(name: base + r.0, value: base + r.2, namelen: r.1, valuelen: r.3, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) { _, streamID, buf, length, flags, _, user in
                guard let user, let buf, let flags else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
                let me = Unmanaged<H2Session>.fromOpaque(user).takeUnretainedValue()
                guard let stream = me.streams[streamID] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
                let end = stream.cutAt ?? stream.responseBody.count
                // A cut answer: once its first half is out, failing here resets the stream.
                if stream.cutAt != nil, stream.responseOffset == end { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
                let n = min(length, end - stream.responseOffset)
                if n > 0 {
                    stream.responseBody.withUnsafeBytes { body in
                        UnsafeMutableRawPointer(buf).copyMemory(from: body.baseAddress! + stream.responseOffset, byteCount: n)
                    }
                }
                stream.responseOffset += n
                if stream.responseOffset == stream.responseBody.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return n
            }
            _ = nghttp2_submit_response(session, streamID, &headers, headers.count, &provider)
        }
    }
}
