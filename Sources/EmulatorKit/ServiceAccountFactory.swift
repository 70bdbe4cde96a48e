import Foundation

/// Makes a throwaway Google service-account JSON with a fresh RSA-2048 key (for tests and demos).
public enum ServiceAccountFactory {
    /// The JSON text of a new service account for `projectID` whose `token_uri` is `tokenURI`.
    public static func make(projectID: String, clientEmail: String, tokenURI: String) throws -> String {
        let key = try RSAKey.generate(bits: 2048)
        let pem = try key.privateKeyPEM()
        let keyID = (0..<20).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let clientID = String(UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999))
        let fields: [(String, String)] = [
            ("type", "service_account"),
            ("project_id", projectID),
            ("private_key_id", keyID),
            ("private_key", pem),
            ("client_email", clientEmail),
            ("client_id", clientID),
            ("auth_uri", "https://accounts.google.com/o/oauth2/auth"),
            ("token_uri", tokenURI),
            ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
            ("client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/" + clientEmail),
            ("universe_domain", "googleapis.com"),
        ]
        return "{\n" + fields.map { "  \(JSONValue.quoted($0.0)): \(JSONValue.quoted($0.1))" }.joined(separator: ",\n") + "\n}\n"
    }

    /// A default client e-mail for `projectID`.
    public static func defaultClientEmail(projectID: String) -> String {
        "fcm-emulator@\(projectID).iam.gserviceaccount.com"
    }
}

/// The parts of a service-account file the token endpoint needs: who it is and its public key.
struct ServiceAccountKey: Sendable {
    let clientEmail: String
    let privateKeyID: String?
    let projectID: String?
    let key: RSAKey

    /// Reads a Google service-account JSON text.
    static func parse(_ text: String) throws -> ServiceAccountKey {
        let json = try JSONParser.parse(text)
        guard let email = json["client_email"]?.stringValue, let pem = json["private_key"]?.stringValue else {
            throw RSAKey.KeyError(description: "service account file lacks client_email or private_key")
        }
        return ServiceAccountKey(clientEmail: email, privateKeyID: json["private_key_id"]?.stringValue,
                                 projectID: json["project_id"]?.stringValue, key: try RSAKey.fromPEM(pem))
    }
}

/// Signs JWT assertions like the Google SDKs do (used by tests and demos).
enum JWTAssertion {
    static func sign(headerJSON: String, claimsJSON: String, key: RSAKey) throws -> String {
        let signingInput = Base64URL.encode(Array(headerJSON.utf8)) + "." + Base64URL.encode(Array(claimsJSON.utf8))
        return signingInput + "." + Base64URL.encode(try key.signRS256(Array(signingInput.utf8)))
    }
}
