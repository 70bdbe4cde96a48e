import COpenSSL
import Glibc

/// The client TLS settings shared by every connection of an `H2Transport`: TLS 1.2+, peer
/// verification against the system store or `caFile` (unless `verifyTLS` is off), ALPN h2.
final class H2TLSContext: @unchecked Sendable {
    let context: OpaquePointer?
    /// Why the context is unusable (file names only); every TLS connection then fails with it.
    let setupError: String?
    let verify: Bool

    init(configuration: CurlTransportConfiguration) {
        verify = configuration.verifyTLS
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            context = nil
            setupError = "SSL_CTX_new failed"
            return
        }
        _ = pc_ssl_ctx_set_min_tls12(ctx)
        var error: String?
        if configuration.verifyTLS {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
            if let caFile = configuration.caFile {
                if SSL_CTX_load_verify_locations(ctx, caFile, nil) != 1 {
                    error = "cannot load CA file \(caFile)"
                }
            } else if SSL_CTX_set_default_verify_paths(ctx) != 1 {
                error = "cannot load the system CA store"
            }
            ERR_clear_error()
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        }
        context = ctx
        setupError = error
    }

    deinit { if let context { SSL_CTX_free(context) } }
}

/// TLS for one connection over memory BIOs: the connection moves ciphertext between the socket
/// (recv, send with MSG_NOSIGNAL, so no SIGPIPE) and OpenSSL; OpenSSL never touches the fd.
/// Checks the peer's name (SSL_set1_host, or the IP address for an IP literal) and sends SNI.
final class H2TLSSession {
    enum Handshake {
        case done
        case wantMore
        case failed(String)
    }

    private let ssl: OpaquePointer
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer
    private(set) var handshakeDone = false

    init?(context: H2TLSContext, host: String) {
        guard let ctx = context.context, let ssl = SSL_new(ctx) else { return nil }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            return nil
        }
        _ = pc_bio_set_mem_eof_return(incoming, -1)
        _ = pc_bio_set_mem_eof_return(outgoing, -1)
        SSL_set_bio(ssl, incoming, outgoing)
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
        SSL_set_connect_state(ssl)
        let alpn: [UInt8] = [2, 0x68, 0x32]  // "h2"
        _ = SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count))
        if Self.isIPLiteral(host) {
            if context.verify { _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) }
        } else {
            _ = pc_ssl_set_tlsext_host_name(ssl, host)
            if context.verify { _ = SSL_set1_host(ssl, host) }
        }
    }

    deinit { SSL_free(ssl) }

    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Hands ciphertext read from the socket to OpenSSL.
    func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = BIO_write(incoming, base, Int32(bytes.count))
    }

    /// Advances the handshake; on success the peer must have chosen ALPN h2.
    func handshake() -> Handshake {
        ERR_clear_error()  // SSL_get_error reads the thread's queue, which other connections of this loop share
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            var data: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &data, &length)
            guard let data, length == 2, data[0] == 0x68, data[1] == 0x32 else {
                return .failed("the server did not negotiate HTTP/2 (ALPN h2)")
            }
            handshakeDone = true
            return .done
        }
        let code = SSL_get_error(ssl, r)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return .wantMore }
        let verifyResult = SSL_get_verify_result(ssl)
        var message: String
        if verifyResult != 0 {
            message = "certificate verify failed: " + String(cString: X509_verify_cert_error_string(verifyResult))
        } else {
            let error = ERR_get_error()
            if error != 0 {
                var buffer = [UInt8](repeating: 0, count: 256)
                buffer.withUnsafeMutableBufferPointer { raw in
                    raw.withMemoryRebound(to: CChar.self) { ERR_error_string_n(error, $0.baseAddress, $0.count) }
                }
                message = "TLS handshake failed: " + String(decoding: buffer.prefix(while: { $0 != 0 }), as: UTF8.self)
            } else {
                message = "TLS handshake failed"
            }
        }
        ERR_clear_error()
        return .failed(message)
    }

    /// Plaintext from what was fed: a byte count, 0 when more ciphertext is needed, nil when the
    /// peer closed TLS or it failed.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        ERR_clear_error()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 { return Int(n) }
        let code = SSL_get_error(ssl, n)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return 0 }
        ERR_clear_error()
        return nil
    }

    /// Encrypts plaintext into the outgoing BIO; false on a TLS failure.
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
        ERR_clear_error()
        let n = SSL_write(ssl, base, Int32(bytes.count))
        if n == Int32(bytes.count) { return true }
        ERR_clear_error()
        return false
    }

    /// Moves the ciphertext OpenSSL produced onto the end of `buffer`.
    func drain(into buffer: inout [UInt8]) {
        while true {
            let pending = Int(BIO_ctrl_pending(outgoing))
            guard pending > 0 else { return }
            let start = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: pending))
            let n = buffer.withUnsafeMutableBytes { BIO_read(outgoing, $0.baseAddress! + start, Int32(pending)) }
            buffer.removeLast(pending - Int(max(0, n)))
            if n <= 0 { return }
        }
    }
}
