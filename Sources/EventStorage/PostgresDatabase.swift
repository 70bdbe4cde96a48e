import CPostgres
import FoundationEssentials
import Glibc
import ServiceRuntime

/// One PostgreSQL connection (Debian's libpq through the CPostgres shim), opened from a
/// `postgres://user[:password]@host[:port]/database[?params]` URL.
///
/// Statements take text parameters (`$1`, `$2` …, nil for NULL) and return rows as text. Not
/// thread-safe: use it from one thread at a time, like `SQLiteDatabase`.
public final class PostgresDatabase: @unchecked Sendable {
    private let connection: OpaquePointer
    /// The URL with its password masked, for messages.
    public let redactedURL: String

    /// Connects; a refused connection or login throws `PostgresError` naming the redacted URL.
    ///
    /// The whole connection attempt (TCP, TLS, start-up and login) gives up after
    /// `connectTimeoutSeconds` (libpq's `connect_timeout`; at least 2), so a server that accepts
    /// the TCP connection and then says nothing (halted, overloaded, a black-holed route) fails
    /// instead of hanging the caller for ever. A `connect_timeout` in the URL takes precedence.
    public init(url: String, connectTimeoutSeconds: Int = 10) throws(PostgresError) {
        redactedURL = Self.redact(url)
        // Parsed first: libpq's own message for a malformed string quotes it, password and all.
        var parseError: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(url, &parseError) else {
            PQfreemem(parseError)
            throw .connect(redactedURL, "not a valid PostgreSQL URL or connection string")
        }
        PQconninfoFree(parsed)
        // Keywords are applied in order and `dbname` is expanded (expand_dbname = 1), so a
        // connect_timeout in the URL overrides the one given before it.
        let keywords = ["connect_timeout", "dbname"], values = [String(max(2, connectTimeoutSeconds)), url]
        let opened = Self.withCStrings(keywords) { keys in
            Self.withCStrings(values) { vals in
                PQconnectdbParams(keys + [nil], vals + [nil], 1)
            }
        }
        guard let connection = opened else { throw .connect(redactedURL, "out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let detail = Self.message(of: connection)
            PQfinish(connection)
            throw .connect(redactedURL, detail)
        }
        self.connection = connection
        _ = PQsetClientEncoding(connection, "UTF8")
    }

    deinit { PQfinish(connection) }

    /// Runs one statement with text parameters and returns its rows (none for commands).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> PostgresRows {
        let result = Self.withCStrings(parameters) { pointers in
            PQexecParams(connection, sql, Int32(pointers.count), nil, pointers, nil, nil, 0)
        }
        return try rows(of: result, sql)
    }

    /// Runs several statements separated by `;`, without parameters (schema set-up).
    public func executeScript(_ sql: String) throws(PostgresError) {
        // PQexec runs the statements as one transaction and returns the last one's result (or
        // the first failure's).
        let result = PQexec(connection, sql)
        try checkOnly(result, sql)
        PQclear(result)
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    @discardableResult
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    /// True while the connection is usable.
    public var isConnected: Bool { PQstatus(connection) == CONNECTION_OK }

    private func rows(of result: OpaquePointer?, _ sql: String) throws(PostgresError) -> PostgresRows {
        try checkOnly(result, sql)
        return PostgresRows(result!)
    }

    private func checkOnly(_ result: OpaquePointer?, _ sql: String) throws(PostgresError) {
        guard let result else {
            throw isConnected ? .execute(sql, nil, Self.message(of: connection)) : .lost(redactedURL, Self.message(of: connection))
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            let state = PQresultErrorField(result, pc_pg_diag_sqlstate()).map { String(cString: $0) }
            let detail = String(cString: PQresultErrorMessage(result)).trimmingWhitespace(newlines: true)
            PQclear(result)
            if !isConnected { throw .lost(redactedURL, detail) }
            throw .execute(sql, state, detail)
        }
    }

    private static func message(of connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingWhitespace(newlines: true)
    }

    /// Calls `body` with C strings for `values` (nil stays a NULL pointer), valid during the call.
    private static func withCStrings<R>(_ values: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let copies = values.map { $0.map { strdup($0)! } }
        defer { copies.forEach { free($0) } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }

    /// `postgres://user:secret@host/db` → `postgres://user:***@host/db`; every password a URL's
    /// query or a keyword/value string can carry is masked too (`SecretRedaction`).
    public static func redact(_ url: String) -> String { SecretRedaction.redact(url) }
}

/// The rows of one statement, as text (nil for NULL). Frees libpq's result when released.
public final class PostgresRows: @unchecked Sendable {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }
    deinit { PQclear(result) }

    public var count: Int { Int(PQntuples(result)) }
    public var columnCount: Int { Int(PQnfields(result)) }

    /// The value at `row`, `column`; nil for NULL.
    public func text(_ row: Int, _ column: Int) -> String? {
        if PQgetisnull(result, Int32(row), Int32(column)) != 0 { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    /// The value at `row`, `column` as an integer; nil for NULL or a non-number.
    public func integer(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }

    /// Rows changed by an INSERT / UPDATE / DELETE (0 for other statements).
    public var changes: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }
}
