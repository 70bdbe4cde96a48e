import COpenSSL
import Foundation
@testable import FCM

/// Test RSA keys made with OpenSSL, plus a verifier for RS256 signatures.
enum TestKeys {
    /// A fresh RSA-2048 key as a PKCS#8 PEM string.
    static func makePrivateKeyPEM(bits: Int32 = 2048) -> String {
        let context = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil)!
        defer { EVP_PKEY_CTX_free(context) }
        precondition(EVP_PKEY_keygen_init(context) == 1)
        precondition(EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1)
        var key: OpaquePointer?
        precondition(EVP_PKEY_keygen(context, &key) == 1)
        defer { EVP_PKEY_free(key) }
        let bio = BIO_new(BIO_s_mem())!
        defer { BIO_free(bio) }
        precondition(PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1)
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        return pointer!.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// Verifies an RS256 signature with the public half of `privateKeyPEM`.
    static func verify(signature: [UInt8], message: [UInt8], privateKeyPEM: String) -> Bool {
        let pem = Array(privateKeyPEM.utf8)
        let key: OpaquePointer? = pem.withUnsafeBytes { raw in
            let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count))
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { return false }
        defer { EVP_PKEY_free(key) }
        // Round-trip the public key alone, so the check uses only public material.
        let publicBIO = BIO_new(BIO_s_mem())!
        defer { BIO_free(publicBIO) }
        guard PEM_write_bio_PUBKEY(publicBIO, key) == 1,
              let publicKey = PEM_read_bio_PUBKEY(publicBIO, nil, nil, nil) else { return false }
        defer { EVP_PKEY_free(publicKey) }
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, publicKey) == 1 else { return false }
        return signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress, msg.count) == 1
            }
        }
    }

    static func serviceAccountJSON(privateKey: String, tokenURI: String = "https://oauth2.googleapis.com/token",
                                   dropping field: String? = nil, overriding: [String: Any] = [:]) -> [UInt8] {
        var object: [String: Any] = [
            "type": "service_account", "project_id": "shop-prod", "private_key_id": "kid-123",
            "private_key": privateKey, "client_email": "fcm@shop-prod.iam.gserviceaccount.com",
            "client_id": "1234", "token_uri": tokenURI,
        ]
        if let field { object[field] = nil }
        for (key, value) in overriding { object[key] = value }
        return Array(try! JSONSerialization.data(withJSONObject: object))
    }

    /// One key per test process: RSA generation is slow.
    static let shared = makePrivateKeyPEM()
}
