import COpenSSL

/// An RSA key held by OpenSSL: RS256 signing (tests, throwaway service accounts) and verification
/// (OAuth assertions). The key material never reaches a log line or an error message.
final class RSAKey: @unchecked Sendable {
    // EVP_PKEY is safe to use from several threads for sign/verify in OpenSSL 3.
    private let key: OpaquePointer

    /// Why a key could not be made or read (never includes key material).
    struct KeyError: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    private init(key: OpaquePointer) { self.key = key }
    deinit { EVP_PKEY_free(key) }

    /// A fresh RSA key.
    static func generate(bits: UInt32 = 2048) throws(KeyError) -> RSAKey {
        guard let key = pc_emu_rsa_generate(bits) else { throw KeyError(description: "RSA key generation failed") }
        return RSAKey(key: key)
    }

    /// Reads a PEM private key (PKCS#8 or PKCS#1) or a PEM public key.
    static func fromPEM(_ pem: String) throws(KeyError) -> RSAKey {
        let bytes = Array(pem.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            if pem.contains("PUBLIC KEY") { return PEM_read_bio_PUBKEY(bio, nil, nil, nil) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let parsed else { throw KeyError(description: "not a readable PEM key") }
        return RSAKey(key: parsed)
    }

    /// PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as in Google service-account files.
    func privateKeyPEM() throws(KeyError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw KeyError(description: "out of memory") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { throw KeyError(description: "PEM encoding failed") }
        let length = Int(BIO_ctrl_pending(bio))
        var out = [UInt8](repeating: 0, count: length)
        let read = out.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(length)) }
        return String(decoding: out.prefix(max(0, Int(read))), as: UTF8.self)
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (JWT `RS256`).
    func signRS256(_ data: [UInt8]) throws(KeyError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw KeyError(description: "out of memory") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { throw KeyError(description: "sign init failed") }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, data, data.count) == 1 else { throw KeyError(description: "sign failed") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &signature, &length, data, data.count) == 1 else { throw KeyError(description: "sign failed") }
        return Array(signature.prefix(length))
    }

    /// True when `signature` is a valid RS256 signature of `data` by this key.
    func verifyRS256(signature: [UInt8], data: [UInt8]) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { ERR_clear_error(); return false }
        let ok = EVP_DigestVerify(ctx, signature, signature.count, data, data.count) == 1
        ERR_clear_error()
        return ok
    }
}
