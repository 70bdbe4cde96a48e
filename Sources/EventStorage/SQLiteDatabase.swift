import CSQLite
import Glibc

/// One SQLite connection (Debian's libsqlite3 through the CSQLite shim).
///
/// Not thread-safe by itself: use it from one thread at a time (the events store confines it to
/// its writer thread; `stats` opens its own read-only connection).
public final class SQLiteDatabase: @unchecked Sendable {
    let handle: OpaquePointer
    public let path: String

    /// Opens (creating unless `readOnly`) the database at `path`. Writers get WAL journaling and
    /// `synchronous=NORMAL` (durable at each checkpoint, consistent after a crash: a committed
    /// transaction survives a killed process) and a busy timeout for readers running alongside.
    public init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        if !readOnly { Self.createPrivately(path) }
        var db: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let detail = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw .open(path, rc, detail)
        }
        handle = db
        self.path = path
        sqlite3_busy_timeout(db, 5000)
        if !readOnly {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=NORMAL")
        }
    }

    deinit { sqlite3_close_v2(handle) }

    /// Creates a missing database file readable by its owner only (0600, whatever the umask):
    /// it holds tokens and message ids. SQLite gives its `-wal` and `-shm` files the database
    /// file's mode. An existing file keeps the mode its operator gave it.
    private static func createPrivately(_ path: String) {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }  // exists already, or SQLite will say why it cannot open it
        fchmod(descriptor, 0o600)  // the umask may have narrowed it further: exactly 0600
        close(descriptor)
    }

    /// Runs one or more statements without results.
    public func execute(_ sql: String) throws(SQLiteError) {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &error)
        if rc != SQLITE_OK {
            let detail = error.map { String(cString: $0) } ?? lastMessage
            sqlite3_free(error)
            throw .execute("\"\(sql.prefix(60))\"", rc, detail)
        }
    }

    /// Compiles a statement, to be reused (bind, step, reset) for every row.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw .prepare(sql, rc, lastMessage) }
        return SQLiteStatement(statement, database: self)
    }

    /// Rows changed by the last INSERT / UPDATE / DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }
}
