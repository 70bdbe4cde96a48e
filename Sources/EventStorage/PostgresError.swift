/// A failure of the PostgreSQL adapter: what was being done, the server's SQLSTATE when it
/// answered one, and libpq's message. Never holds the password of the connection URL.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable { case connect, execute, lost }
    private let code: Code
    /// The five-character SQLSTATE (`23505` unique violation, `40001` serialization failure …),
    /// nil when the failure did not come from the server.
    public let sqlState: String?
    public let message: String

    private init(_ code: Code, _ sqlState: String?, _ message: String) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
    }

    static func connect(_ target: String, _ detail: String) -> PostgresError {
        PostgresError(.connect, nil, "cannot connect to \(target): \(detail)")
    }
    static func execute(_ sql: String, _ sqlState: String?, _ detail: String) -> PostgresError {
        PostgresError(.execute, sqlState, "\"\(sql.prefix(60))\" failed: \(detail)")
    }
    static func lost(_ target: String, _ detail: String) -> PostgresError {
        PostgresError(.lost, nil, "connection to \(target) lost: \(detail)")
    }

    /// The connection is gone (server restart, network): reconnect and run the transaction again.
    public var isConnectionLost: Bool { code == .lost || code == .connect }
    /// A unique or primary key already holds the value.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    public var description: String { "PostgreSQL: \(message)" }
}
