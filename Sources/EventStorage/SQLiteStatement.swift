import CSQLite

/// A prepared statement, reused: `bind` parameters (1-based), `step` through rows, `reset`.
public final class SQLiteStatement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase

    init(_ statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    /// Binds text (copied by SQLite), or NULL for nil.
    public func bind(_ index: Int32, _ value: String?) throws(SQLiteError) {
        let rc: Int32
        if let value {
            rc = value.utf8.withContiguousStorageIfAvailable { bytes in
                bytes.withMemoryRebound(to: CChar.self) { pc_sqlite3_bind_text_copy(statement, index, $0.baseAddress, Int32($0.count)) }
            } ?? pc_sqlite3_bind_text_copy(statement, index, value, -1)
        } else {
            rc = sqlite3_bind_null(statement, index)
        }
        guard rc == SQLITE_OK else { throw .bind(index, rc) }
    }

    /// Binds an integer, or NULL for nil.
    public func bind(_ index: Int32, _ value: Int64?) throws(SQLiteError) {
        let rc = value.map { sqlite3_bind_int64(statement, index, $0) } ?? sqlite3_bind_null(statement, index)
        guard rc == SQLITE_OK else { throw .bind(index, rc) }
    }

    /// Advances to the next row: true when a row is available, false when done.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(statement)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let message = database.lastMessage
            sqlite3_reset(statement)
            throw .execute("step", rc, message)
        }
    }

    /// Runs the statement to completion and resets it for the next use.
    public func run() throws(SQLiteError) {
        defer { reset() }
        while try step() {}
    }

    /// Clears the bindings and rewinds.
    public func reset() {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
    }

    /// The integer in column `index` (0-based) of the current row.
    public func int(_ index: Int32) -> Int64 { sqlite3_column_int64(statement, index) }

    /// The text in column `index` (0-based) of the current row, nil for NULL.
    public func text(_ index: Int32) -> String? {
        guard sqlite3_column_type(statement, index) != SQLITE_NULL, let p = sqlite3_column_text(statement, index) else { return nil }
        return String(cString: p)
    }
}
