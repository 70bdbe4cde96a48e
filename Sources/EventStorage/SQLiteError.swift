/// A failure of the SQLite adapter: what was being done, SQLite's result code and message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable { case open, prepare, execute, bind }
    private let code: Code
    /// SQLite's primary result code (`SQLITE_BUSY` = 5, `SQLITE_CORRUPT` = 11 …).
    public let resultCode: Int32
    public let message: String

    private init(_ code: Code, _ resultCode: Int32, _ message: String) {
        self.code = code
        self.resultCode = resultCode
        self.message = message
    }

    static func open(_ path: String, _ rc: Int32, _ detail: String) -> SQLiteError {
        SQLiteError(.open, rc, "cannot open database \(path): \(detail)")
    }
    static func prepare(_ sql: String, _ rc: Int32, _ detail: String) -> SQLiteError {
        SQLiteError(.prepare, rc, "cannot prepare \"\(sql.prefix(60))\": \(detail)")
    }
    static func execute(_ what: String, _ rc: Int32, _ detail: String) -> SQLiteError {
        SQLiteError(.execute, rc, "\(what) failed: \(detail)")
    }
    static func bind(_ index: Int32, _ rc: Int32) -> SQLiteError {
        SQLiteError(.bind, rc, "cannot bind parameter \(index) (code \(rc))")
    }

    public var description: String { "SQLite: \(message)" }

    /// SQLITE_BUSY (5), LOCKED (6), READONLY (8), IOERR (10), FULL (13), CANTOPEN (14),
    /// PROTOCOL (15): the file is held by another writer, out of room or not writable right now;
    /// none says anything about the rows written.
    public var isTransient: Bool { [5, 6, 8, 10, 13, 14, 15].contains(resultCode & 0xFF) }
}
