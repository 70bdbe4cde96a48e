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
}
