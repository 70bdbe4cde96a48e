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
                app.credentialsFile = app.credentialsFile.map { resolve($0, relativeTo: path) }
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

    /// An App ID's credentials (`Credentials.resolve`): its `credentials_file`, else Application
    /// Default Credentials from `environment`.
    public static func credentials(_ app: AppConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment,
                                   allowInsecureHTTP: Bool) throws(ServiceAccountError) -> Credentials {
        try Credentials.resolve(credentialsFile: app.credentialsFile, environment: environment, allowInsecureHTTP: allowInsecureHTTP)
    }

    /// An App ID's credentials as the worker sends with them: a readable, well-formed service
    /// account whose key can sign (refused now, not per job), or the metadata server. The error
    /// names the app and what named its credentials.
    public static func usableCredentials(_ app: AppConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment,
                                         allowInsecureHTTP: Bool) throws(ConfigurationError) -> Credentials {
        do {
            let resolved = try credentials(app, environment: environment, allowInsecureHTTP: allowInsecureHTTP)
            if case .serviceAccount(let account) = resolved { _ = try RSASigner(pem: account.privateKey) }
            return resolved
        } catch {
            let named = app.credentialsFile == nil ? "credentials (none named: Application Default Credentials)" : "credentials_file"
            throw ConfigurationError("app \(app.appID): \(named): \(error)")
        }
    }

    /// Each App ID's `usableCredentials` problem, one line each, naming the App ID file.
    public static func credentialProblems(_ registry: AppRegistry, path: String, allowInsecureHTTP: Bool,
                                          environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        registry.appIDs.compactMap { appID in
            do {
                _ = try usableCredentials(registry[appID]!, environment: environment, allowInsecureHTTP: allowInsecureHTTP)
                return nil
            } catch {
                return "\(path): \(error)"
            }
        }
    }

    /// Warnings about a valid configuration: an App ID whose `project_id` is not its service
    /// account's `project_id`. Legal (an account may be granted the FCM role in another
    /// project), but most often a copied file; sends go to `project_id`, and the account is
    /// refused there (`PERMISSION_DENIED`) unless it was granted the role.
    public static func credentialWarnings(_ registry: AppRegistry, path: String, allowInsecureHTTP: Bool,
                                          environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        registry.appIDs.compactMap { appID in
            let app = registry[appID]!
            guard case .serviceAccount(let account)? = try? credentials(app, environment: environment, allowInsecureHTTP: allowInsecureHTTP),
                  account.projectID != app.projectID else { return nil }
            return "\(path): app \(appID): warning: project_id \"\(app.projectID)\" is not the credentials' project_id "
                + "\"\(account.projectID)\": sends go to \(app.projectID), where this service account needs the "
                + "Firebase Cloud Messaging API Admin role"
        }
    }

    /// Where each App ID's tokens come from, one line each (`config check`, `worker --check`).
    public static func credentialSources(_ registry: AppRegistry, allowInsecureHTTP: Bool,
                                         environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        registry.appIDs.map { appID in
            let app = registry[appID]!
            let source = (try? credentials(app, environment: environment, allowInsecureHTTP: allowInsecureHTTP))?.description ?? "unusable"
            let variable: String = environment["GOOGLE_APPLICATION_CREDENTIALS"] ?? ""
            let named: String
            if let file = app.credentialsFile {
                named = "credentials_file " + file
            } else if !variable.isEmpty {
                named = "no credentials_file; GOOGLE_APPLICATION_CREDENTIALS=" + variable
            } else {
                named = "no credentials_file, no GOOGLE_APPLICATION_CREDENTIALS"
            }
            return "\(appID): tokens from \(source) [\(named)]"
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
                let file = registry[id]!.credentialsFile ?? ProcessInfo.processInfo.environment["GOOGLE_APPLICATION_CREDENTIALS"] ?? ""
                print.append(contentsOf: FileManager.default.contents(atPath: file).map(Array.init) ?? [])
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
