import FCM
import FoundationEssentials
import PushCore
import ServiceRuntime

/// Reads the App ID configuration file; every problem is reported with the file and field named.
/// A relative `credentials_file` is resolved against the App ID file's directory (not the
/// working directory), so the file and its keys can move together (a ConfigMap beside a Secret).
public enum AppConfigurationFile {
    /// The registry in `path`, or a `ConfigurationError` naming the file, field and rule of each problem.
    public static func load(_ path: String) throws(ConfigurationError) -> AppRegistry {
        try registry(path, bytes: try readFile(path, what: "App ID configuration"))
    }

    static func registry(_ path: String, bytes: [UInt8]) throws(ConfigurationError) -> AppRegistry {
        do {
            let registry = try AppRegistry.decode(bytes)
            return AppRegistry(registry.appIDs.map { id in
                var app = registry[id]!
                app.credentialsFile = resolve(app.credentialsFile, relativeTo: path)
                return app
            })
        } catch {
            throw ConfigurationError(error.issues.map { "\(path): \($0)" }.joined(separator: "\n"))
        }
    }

    /// `file` as named inside the App ID file at `configPath`: absolute paths stay, relative
    /// ones are taken from the App ID file's directory (standard input: the working directory).
    public static func resolve(_ file: String, relativeTo configPath: String) -> String {
        guard !file.hasPrefix("/"), configPath != "-" else { return file }
        let directory = FilePaths.directory(of: configPath)
        return directory.isEmpty ? file : FilePaths.join(directory, file)
    }

    /// Each App ID's credentials: a readable, well-formed service account whose key can sign.
    /// One line per problem, naming the App ID file and the app.
    public static func credentialProblems(_ registry: AppRegistry, path: String, allowInsecureHTTP: Bool) -> [String] {
        registry.appIDs.compactMap { appID in
            do {
                let account = try ServiceAccount.load(contentsOf: registry[appID]!.credentialsFile, allowInsecureHTTP: allowInsecureHTTP)
                _ = try RSASigner(pem: account.privateKey)
                return nil
            } catch {
                return "\(path): app \(appID): credentials_file: \(error)"
            }
        }
    }

    /// Warnings about a valid configuration: an App ID whose `project_id` is not its service
    /// account's `project_id`. Legal (an account may be granted the FCM role in another
    /// project), but most often a copied file; sends go to `project_id`, and the account is
    /// refused there (`PERMISSION_DENIED`) unless it was granted the role.
    public static func credentialWarnings(_ registry: AppRegistry, path: String, allowInsecureHTTP: Bool) -> [String] {
        registry.appIDs.compactMap { appID in
            let app = registry[appID]!
            guard let account = try? ServiceAccount.load(contentsOf: app.credentialsFile, allowInsecureHTTP: allowInsecureHTTP),
                  account.projectID != app.projectID else { return nil }
            return "\(path): app \(appID): warning: project_id \"\(app.projectID)\" is not the credentials' project_id "
                + "\"\(account.projectID)\": sends go to \(app.projectID), where this service account needs the "
                + "Firebase Cloud Messaging API Admin role"
        }
    }

    /// What a change on disk is detected by: the App ID file's bytes and those of every
    /// credentials file it names (content, not mtime: a ConfigMap update swaps a symlink and
    /// may keep the time). Nil when the App ID file cannot be read.
    public static func fingerprint(_ path: String) -> [UInt8]? {
        guard let bytes = FileManager.default.contents(atPath: path).map(Array.init) else { return nil }
        var print = bytes
        if let registry = try? registry(path, bytes: bytes) {
            for id in registry.appIDs {
                print.append(0)
                print.append(contentsOf: FileManager.default.contents(atPath: registry[id]!.credentialsFile).map(Array.init) ?? [])
            }
        }
        return print
    }

    /// The bytes of a file (or standard input for "-"), or a one-line error naming it.
    public static func readFile(_ path: String, what: String) throws(ConfigurationError) -> [UInt8] {
        if path == "-" { return FileOutput.readStandardInput() }
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw ConfigurationError("\(path): \(what) file \(reason)")
        }
        return Array(data)
    }
}
