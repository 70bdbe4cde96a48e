import FoundationEssentials

/// What an App ID's access tokens are fetched with: its service account's key, or the Google
/// metadata server of the machine it runs on (GCE, GKE Workload Identity, Cloud Run), which
/// hands out the tokens of the service account attached to it: no key file anywhere.
public enum Credentials: Sendable, Hashable, CustomStringConvertible {
    case serviceAccount(ServiceAccount)
    /// The metadata server at `host` (`metadata.google.internal`, or `GCE_METADATA_HOST`).
    case metadataServer(host: String)

    /// The metadata server's host when `GCE_METADATA_HOST` is not set (Google's libraries' default).
    public static let defaultMetadataHost = "metadata.google.internal"

    /// The token URL of the metadata server at `host`, asking for FCM's scope (honoured on GKE
    /// and Cloud Run; a VM's tokens carry the scopes the VM was given).
    public static func metadataTokenURL(host: String) -> String {
        "http://\(host)/computeMetadata/v1/instance/service-accounts/default/token?scopes="
            + "https%3A%2F%2Fwww.googleapis.com%2Fauth%2Ffirebase.messaging"
    }

    /// One cached token per key (service account) or per metadata server.
    var cacheKey: String {
        switch self {
        case .serviceAccount(let account): account.cacheKey
        case .metadataServer(let host): "metadata\u{0}" + host
        }
    }

    /// Where tokens come from, in words (for `config check` and logs; never a secret).
    public var description: String {
        switch self {
        case .serviceAccount(let account):
            "service account \(account.clientEmail) (key \(account.privateKeyID.prefix(8))…, project \(account.projectID))"
        case .metadataServer(let host):
            "the metadata server at \(host) (Application Default Credentials: the service account attached to the machine or pod)"
        }
    }

    /// The App ID's credentials: its `credentials_file` when it names one; otherwise Application
    /// Default Credentials as Google's libraries find them: the service-account file named by
    /// `GOOGLE_APPLICATION_CREDENTIALS`, else the metadata server (at `GCE_METADATA_HOST` when set).
    /// Errors name the file or the variable, never a key.
    public static func resolve(credentialsFile: String?, environment: [String: String],
                               allowInsecureHTTP: Bool) throws(ServiceAccountError) -> Credentials {
        if let credentialsFile {
            return .serviceAccount(try ServiceAccount.load(contentsOf: credentialsFile, allowInsecureHTTP: allowInsecureHTTP))
        }
        if let path = environment["GOOGLE_APPLICATION_CREDENTIALS"], !path.isEmpty {
            do {
                return .serviceAccount(try ServiceAccount.load(contentsOf: path, allowInsecureHTTP: allowInsecureHTTP))
            } catch {
                throw error.namingVariable("GOOGLE_APPLICATION_CREDENTIALS")
            }
        }
        let host = environment["GCE_METADATA_HOST"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultMetadataHost
        guard !host.contains(where: { $0 == "/" || $0 == "@" || $0 == "?" || $0 == "#" || $0 == " " }) else {
            throw .invalidVariable("GCE_METADATA_HOST", reason: "must be HOST or HOST:PORT")
        }
        return .metadataServer(host: host)
    }
}
