import COpenSSL
import Glibc

/// Result of a non-blocking read.
enum ReadResult {
    case bytes(Int)
    case wouldBlock
    case closed
}

/// Result of a non-blocking write.
enum WriteResult {
    case wrote(Int)
    case wouldBlock
    case failed
}

/// The byte stream under a connection: a plain socket or TLS on top of it.
protocol Transport: AnyObject {
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult
    func write(_ bytes: UnsafeRawBufferPointer) -> WriteResult
    /// True while a TLS handshake needs the socket writable.
    var wantsWritable: Bool { get }
    /// The ALPN protocol chosen by TLS ("h2", "http/1.1"), nil for cleartext or none.
    var negotiatedProtocol: String? { get }
    /// Ends our direction (TLS close_notify, then a TCP FIN) while reads stay open, so a
    /// peer's last bytes are drained instead of answered with a TCP reset.
    func shutdownWrite()
    func close()
}

/// A plain non-blocking socket.
final class SocketTransport: Transport {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        if n > 0 { return .bytes(n) }
        if n == 0 { return .closed }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .wouldBlock : .closed
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> WriteResult {
        let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        if n >= 0 { return .wrote(n) }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .wouldBlock : .failed
    }

    var wantsWritable: Bool { false }
    var negotiatedProtocol: String? { nil }
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }
    func close() { Glibc.close(fd) }
}

/// TLS (OpenSSL) over a non-blocking socket; the handshake runs inside the first reads.
final class TLSTransport: Transport {
    private let ssl: OpaquePointer
    private let fd: Int32
    private var handshakeDone = false
    private(set) var wantsWritable = false
    private(set) var negotiatedProtocol: String?

    init?(fd: Int32, context: TLSContext) {
        guard let ssl = SSL_new(context.context) else { return nil }
        self.ssl = ssl
        self.fd = fd
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(ssl) }

    private func handshake() -> ReadResult? {
        ERR_clear_error()  // SSL_get_error reads the thread's queue: an error left there by another
                           // connection of this loop would end this one (the audit's stalls, issue 32)
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            handshakeDone = true
            wantsWritable = false
            var data: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &data, &length)
            if let data, length > 0 { negotiatedProtocol = String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self) }
            return nil
        }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_READ: wantsWritable = false; return .wouldBlock
        case SSL_ERROR_WANT_WRITE: wantsWritable = true; return .wouldBlock
        default: ERR_clear_error(); return .closed
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if !handshakeDone, let result = handshake() { return result }
        ERR_clear_error()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 { return .bytes(Int(n)) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        default: ERR_clear_error(); return .closed
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> WriteResult {
        guard handshakeDone else { return .wouldBlock }
        ERR_clear_error()
        let n = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
        if n > 0 { return .wrote(Int(n)) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        default: ERR_clear_error(); return .failed
        }
    }

    private var sentCloseNotify = false

    func shutdownWrite() {
        if handshakeDone, !sentCloseNotify { sentCloseNotify = true; SSL_shutdown(ssl); ERR_clear_error() }
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    func close() {
        if handshakeDone, !sentCloseNotify { SSL_shutdown(ssl); ERR_clear_error() }
        Glibc.close(fd)
    }
}

/// The server's OpenSSL context: certificate, key, ALPN (h2 preferred, then http/1.1).
final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer

    /// Why TLS could not be set up (file names only, never key material).
    struct SetupError: Error, CustomStringConvertible { let description: String }

    init(certificateFile: String, keyFile: String) throws(SetupError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw SetupError(description: "SSL_CTX_new failed") }
        context = ctx
        _ = pc_emu_ssl_ctx_set_min_tls12(ctx)
        _ = pc_emu_ssl_ctx_set_partial_write_mode(ctx)
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            ERR_clear_error(); SSL_CTX_free(ctx)
            throw SetupError(description: "cannot load TLS certificate chain from \(certificateFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            ERR_clear_error(); SSL_CTX_free(ctx)
            throw SetupError(description: "cannot load a TLS key matching the certificate from \(keyFile)")
        }
        SSL_CTX_set_alpn_select_cb(ctx, { _, out, outlen, input, inlen, _ in
            // Server preference: h2, then http/1.1 (wire format: length-prefixed names).
            let preferred: [[UInt8]] = [Array("h2".utf8), Array("http/1.1".utf8)]
            guard let input else { return SSL_TLSEXT_ERR_NOACK }
            for want in preferred {
                var i = 0
                while i < Int(inlen) {
                    let len = Int(input[i])
                    if len == want.count, i + 1 + len <= Int(inlen),
                       (0..<len).allSatisfy({ input[i + 1 + $0] == want[$0] }) {
                        out?.pointee = input + i + 1
                        outlen?.pointee = UInt8(len)
                        return SSL_TLSEXT_ERR_OK
                    }
                    i += 1 + len
                }
            }
            return SSL_TLSEXT_ERR_NOACK
        }, nil)
    }

    deinit { SSL_CTX_free(context) }
}
