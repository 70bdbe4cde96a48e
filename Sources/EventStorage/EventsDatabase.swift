import CPostgres
import FoundationEssentials
import ServiceRuntime

/// Where the events are stored, from `--db`: a `postgres://` / `postgresql://` URL, or else the
/// path of a SQLite file. Its description masks a URL's password.
public enum EventsDatabase: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    public init(_ value: String) {
        let lower = value.lowercased()
        self = lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") ? .postgres(url: value) : .sqlite(path: value)
    }

    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): PostgresDatabase.redact(url)
        }
    }

    /// Opens the database for writing, creating its schema when missing.
    public func open() throws -> any EventStoring {
        switch self {
        case .sqlite(let path): try SQLiteEventStore(path: path)
        case .postgres(let url): try PostgresEventStore(url: url)
        }
    }

    /// The funnel, read without creating anything (`stats`).
    public func funnel(_ scope: FunnelScope) throws -> Funnel {
        switch self {
        case .sqlite(let path): try FunnelQuery.run(path: path, scope: scope)
        case .postgres(let url): try PostgresEventStore(url: url, createSchema: false).funnel(scope)
        }
    }

    /// Nil when the database answers a query, else what is wrong (for `/healthz`). A PostgreSQL
    /// server that does not answer fails the probe after `connectTimeoutSeconds`.
    package func problem(connectTimeoutSeconds: Int = 2) -> String? {
        do {
            switch self {
            case .sqlite(let path):
                try SQLiteDatabase(path: path, readOnly: true).execute("SELECT count(*) FROM sqlite_master")
            case .postgres(let url):
                try PostgresDatabase(url: url, connectTimeoutSeconds: connectTimeoutSeconds).execute("SELECT 1")
            }
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Nil when the database looks usable without connecting (`--check`): a SQLite file's
    /// folder is writable; a URL parses as a libpq connection string.
    package func configurationProblem(option: String, command: String) -> String? {
        switch self {
        case .sqlite(let path):
            let directory = FilePaths.directory(of: path)
            let dir = directory.isEmpty ? "." : directory
            return FileManager.default.isWritableFile(atPath: dir)
                ? nil : "\(command): \(option) \(path): directory \(dir) does not exist or is not writable"
        case .postgres(let url):
            var error: UnsafeMutablePointer<CChar>?
            guard let options = PQconninfoParse(url, &error) else {
                // libpq's message may quote the URL: name only the masked form.
                PQfreemem(error)
                return "\(command): \(option) \(description): not a valid PostgreSQL URL"
            }
            PQconninfoFree(options)
            return nil
        }
    }
}
