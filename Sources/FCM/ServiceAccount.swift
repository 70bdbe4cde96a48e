import FoundationEssentials
import PushCore

/// A Google service account as found in the JSON key file downloaded from the Firebase console.
///
/// The private key is kept in memory only to sign OAuth assertions: `description` and
/// `debugDescription` redact it, and no error built from this type ever contains it.
public struct ServiceAccount: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Always `service_account` for a valid file.
    public let type: String
    /// The Firebase / Google Cloud project the account belongs to.
    public let projectID: String
    /// Identifier of the key, sent as the JWT `kid` header.
    public let privateKeyID: String
    /// PEM-encoded PKCS#8 RSA private key. Never printed.
    public let privateKey: String
    /// The account's e-mail address, the JWT issuer.
    public let clientEmail: String
    /// The OAuth2 token endpoint (JWT audience and POST target).
    public let tokenURI: String
    /// Identity used to cache access tokens: one token per account key (made once, read per send).
    let cacheKey: String

    public init(type: String = "service_account", projectID: String, privateKeyID: String,
                privateKey: String, clientEmail: String, tokenURI: String) {
        self.type = type
        self.projectID = projectID
        self.privateKeyID = privateKeyID
        self.privateKey = privateKey
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
        cacheKey = clientEmail + "\u{0}" + privateKeyID + "\u{0}" + tokenURI
    }

    /// Loads and validates a service-account key file. An `http://` `token_uri` is refused
    /// unless its host is loopback or `allowInsecureHTTP` is set (see `CleartextPolicy`).
    public static func load(contentsOf path: String, allowInsecureHTTP: Bool = false) throws(ServiceAccountError) -> ServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadable(file: path)
        }
        return try parse(Array(data), file: path, allowInsecureHTTP: allowInsecureHTTP)
    }

    /// Parses a service-account JSON document; `file` names the source in errors.
    public static func parse(_ bytes: [UInt8], file: String, allowInsecureHTTP: Bool = false) throws(ServiceAccountError) -> ServiceAccount {
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(bytes) } catch { throw .notJSON(file: file) }
        guard let object = parsed.objectValue else { throw .notAnObject(file: file) }
        func field(_ name: String) throws(ServiceAccountError) -> String {
            guard let raw = object[name] else { throw .missingField(file: file, field: name) }
            guard let value = raw.stringValue else { throw .invalidField(file: file, field: name, reason: "not a string") }
            guard !value.isEmpty else { throw .invalidField(file: file, field: name, reason: "empty") }
            return value
        }
        let type = try field("type")
        guard type == "service_account" else {
            // Named, since these are the other Application Default Credentials files (decision 0097).
            let why = switch type {
            case "authorized_user": ": a user's gcloud login is not for servers; use a service account's key or the metadata server"
            case "external_account": ": workload identity federation is not supported; use a service account's key or run on Google Cloud"
            default: ""
            }
            throw .invalidField(file: file, field: "type", reason: "expected \"service_account\"" + why)
        }
        let privateKey = try field("private_key")
        guard privateKey.contains("-----BEGIN PRIVATE KEY-----") || privateKey.contains("-----BEGIN RSA PRIVATE KEY-----") else {
            throw .invalidField(file: file, field: "private_key", reason: "not a PEM private key")
        }
        let tokenURI = try field("token_uri")
        guard tokenURI.hasPrefix("https://") || tokenURI.hasPrefix("http://") else {
            throw .invalidField(file: file, field: "token_uri", reason: "not an http(s) URL")
        }
        if let problem = CleartextPolicy.problem(url: tokenURI, allowInsecureHTTP: allowInsecureHTTP) {
            throw .invalidField(file: file, field: "token_uri", reason: problem)
        }
        let clientEmail = try field("client_email")
        guard clientEmail.contains("@") else {
            throw .invalidField(file: file, field: "client_email", reason: "not an e-mail address")
        }
        return ServiceAccount(type: type, projectID: try field("project_id"),
                              privateKeyID: try field("private_key_id"), privateKey: privateKey,
                              clientEmail: clientEmail, tokenURI: tokenURI)
    }

    public var description: String {
        "ServiceAccount(project_id: \(projectID), client_email: \(clientEmail), private_key_id: \(privateKeyID), private_key: <redacted>)"
    }

    public var debugDescription: String { description }
}

/// Why a service-account file was refused. Names the file and the field, never the key.
public struct ServiceAccountError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case unreadable
        case notJSON
        case notAnObject
        case missingField(String)
        case invalidField(String, reason: String)
        case invalidVariable(String, reason: String)
    }

    private let code: Code
    /// The file the account was read from.
    public let file: String
    /// The environment variable that named the file (`GOOGLE_APPLICATION_CREDENTIALS`), if one did.
    public private(set) var variable: String?

    /// The offending field, when one is to blame.
    public var field: String? {
        switch code {
        case .missingField(let name), .invalidField(let name, _): name
        default: nil
        }
    }

    public static func unreadable(file: String) -> Self { .init(code: .unreadable, file: file) }
    public static func notJSON(file: String) -> Self { .init(code: .notJSON, file: file) }
    public static func notAnObject(file: String) -> Self { .init(code: .notAnObject, file: file) }
    public static func missingField(file: String, field: String) -> Self { .init(code: .missingField(field), file: file) }
    public static func invalidField(file: String, field: String, reason: String) -> Self {
        .init(code: .invalidField(field, reason: reason), file: file)
    }

    /// A variable whose value is not usable (`GCE_METADATA_HOST`).
    public static func invalidVariable(_ name: String, reason: String) -> Self {
        var error = Self(code: .invalidVariable(name, reason: reason), file: "")
        error.variable = name
        return error
    }

    /// The same error, said of the file `variable` named.
    func namingVariable(_ name: String) -> Self {
        var error = self
        error.variable = name
        return error
    }

    public var description: String {
        let what = variable.map { "\($0)=" } ?? ""
        return switch code {
        case .invalidVariable(let name, let reason): "environment variable \(name): \(reason)"
        case .unreadable: "service account file \(what)\(file): cannot be read"
        case .notJSON: "service account file \(what)\(file): not valid JSON"
        case .notAnObject: "service account file \(what)\(file): not a JSON object"
        case .missingField(let name): "service account file \(what)\(file): field \"\(name)\" is missing"
        case .invalidField(let name, let reason): "service account file \(what)\(file): field \"\(name)\" is invalid (\(reason))"
        }
    }
}
