import COpenSSL

/// An RSA private key loaded from PEM, signing with RSASSA-PKCS1-v1_5 / SHA-256 (JWT `RS256`)
/// through OpenSSL's EVP interface. Thread-safe: each signature uses its own digest context.
public final class RSASigner: @unchecked Sendable {
    private let key: OpaquePointer

    /// Loads a PEM private key; the error never contains the key material.
    public init(pem: String) throws(OAuthError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // An empty passphrase: an encrypted key fails here instead of prompting on a terminal.
            let noPassphrase: StaticString = ""
            return PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: noPassphrase.utf8Start))
        }
        ERR_clear_error()
        guard let loaded else { throw .invalidPrivateKey("the PEM private key cannot be read") }
        guard EVP_PKEY_get_base_id(loaded) == EVP_PKEY_RSA else {
            EVP_PKEY_free(loaded)
            throw .invalidPrivateKey("the private key is not an RSA key")
        }
        key = loaded
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs `message` with RS256.
    public func sign(_ message: [UInt8]) throws(OAuthError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .signingFailed }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            throw .signingFailed
        }
        var length = 0
        let ok: Bool = message.withUnsafeBufferPointer { input in
            guard EVP_DigestSign(context, nil, &length, input.baseAddress, input.count) == 1 else { return false }
            return true
        }
        guard ok else { ERR_clear_error(); throw .signingFailed }
        var signature = [UInt8](repeating: 0, count: length)
        let signed: Bool = message.withUnsafeBufferPointer { input in
            signature.withUnsafeMutableBufferPointer { output in
                EVP_DigestSign(context, output.baseAddress, &length, input.baseAddress, input.count) == 1
            }
        }
        guard signed else { ERR_clear_error(); throw .signingFailed }
        return Array(signature.prefix(length))
    }
}
