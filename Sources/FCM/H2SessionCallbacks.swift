import CNGHTTP2
import Glibc

/// The nghttp2 client session of a connection and the callbacks that fill in its requests'
/// responses: `:status` and `retry-after` headers, body chunks up to `maxResponseBytes`, stream
/// close (success, reset, or refused by a GOAWAY and sent again elsewhere), GOAWAY and PING ACK. The callbacks never
/// close the connection (that would free the session inside nghttp2's own call).
extension H2Connection {
    static func makeSession(for connection: H2Connection) -> OpaquePointer? {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0 else { return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let user,
                  frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            let me = Unmanaged<H2Connection>.fromOpaque(user).takeUnretainedValue()
            guard let exchange = me.streams[frame.pointee.hd.stream_id] else { return 0 }
            let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
            if nameBytes.elementsEqual(":status".utf8) {
                let status = Int(String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)) ?? 0
                if status >= 200 { exchange.status = status }  // 1xx: the final answer follows
            } else if nameBytes.elementsEqual("retry-after".utf8) {
                exchange.retryAfter = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, streamID, data, length, user in
            guard let data, let user else { return 0 }
            let me = Unmanaged<H2Connection>.fromOpaque(user).takeUnretainedValue()
            guard let exchange = me.streams[streamID] else { return 0 }
            let limit = me.pool.engine.shared.maxResponseBytes
            guard exchange.responseBody.count + length <= limit else {
                me.streams[streamID] = nil
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
                exchange.finish(.failure(TransportError(kind: .responseTooLarge,
                                                        message: "response body larger than \(limit) bytes")))
                return 0
            }
            exchange.responseBody.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            let me = Unmanaged<H2Connection>.fromOpaque(user).takeUnretainedValue()
            switch frame.pointee.hd.type {
            case UInt8(NGHTTP2_GOAWAY.rawValue):
                let last = frame.pointee.goaway.last_stream_id
                me.goawayLastStreamID = min(last, me.goawayLastStreamID ?? last)
            case UInt8(NGHTTP2_PING.rawValue) where frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
                me.pingAnswered()
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, user in
            guard let user else { return 0 }
            Unmanaged<H2Connection>.fromOpaque(user).takeUnretainedValue().streamClosed(streamID, errorCode: errorCode)
            return 0
        }
        var session: OpaquePointer?
        let user = Unmanaged.passUnretained(connection).toOpaque()
        guard nghttp2_session_client_new(&session, callbacks, user) == 0 else { return nil }
        return session
    }

    /// Copies the request body into DATA frames; EOF with the last byte.
    static let readBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, user in
        guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let me = Unmanaged<H2Connection>.fromOpaque(user).takeUnretainedValue()
        guard let exchange = me.streams[streamID] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let body = exchange.request.body
        let n = min(length, body.count - exchange.bodySent)
        if n > 0 {
            body.withUnsafeBytes {
                UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress! + exchange.bodySent, byteCount: n)
            }
        }
        exchange.bodySent += n
        if exchange.bodySent == body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return n
    }

    private func streamClosed(_ streamID: Int32, errorCode: UInt32) {
        guard let exchange = streams.removeValue(forKey: streamID) else { return }
        if exchange.status != 0, errorCode == NGHTTP2_NO_ERROR.rawValue {
            exchange.succeed()
            return
        }
        let unprocessed = errorCode == NGHTTP2_REFUSED_STREAM.rawValue
            || (goawayLastStreamID.map { streamID > $0 } ?? false)
        if unprocessed, sendElsewhere(exchange) { return }
        let message = errorCode == NGHTTP2_NO_ERROR.rawValue
            ? "stream closed without a response"
            : "stream reset: " + String(cString: nghttp2_http2_strerror(errorCode))
        exchange.finishInterrupted(TransportError(kind: .connectionLost, message: message))
    }
}
