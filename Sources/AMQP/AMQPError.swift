/// An error from the AMQP layer. Compare `code` against the static codes
/// (`error.code == .connectionLost`); `message` is a human-readable detail that never carries a
/// password (only redacted URLs and broker reply texts go into it).
public struct AMQPError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, as a closed set of cases callers can branch on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: String, Hashable, Sendable {
            case invalidURL, invalidSettings, connectionFailed, loginFailed, connectionLost
            case channelClosed, consumerCancelledByServer, nacked, returned, closed, protocolError, confirmTimeout
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }
        public var description: String { backing.rawValue }

        /// The URL could not be parsed.
        public static let invalidURL = Code(.invalidURL)
        /// Settings are inconsistent (for example an unreadable password file).
        public static let invalidSettings = Code(.invalidSettings)
        /// TCP/TLS connection could not be opened.
        public static let connectionFailed = Code(.connectionFailed)
        /// The broker refused the login or the vhost.
        public static let loginFailed = Code(.loginFailed)
        /// An open connection was lost (socket error, heartbeat timeout, server connection.close).
        public static let connectionLost = Code(.connectionLost)
        /// The broker closed the channel (`replyCode` tells why, e.g. 404 NOT_FOUND, 406).
        public static let channelClosed = Code(.channelClosed)
        /// The broker cancelled the consumer (queue deleted, node failover).
        public static let consumerCancelledByServer = Code(.consumerCancelledByServer)
        /// The broker answered a publish with basic.nack: the message was not taken.
        public static let nacked = Code(.nacked)
        /// A mandatory publish was returned unroutable (basic.return).
        public static let returned = Code(.returned)
        /// The object was already closed by the caller.
        public static let closed = Code(.closed)
        /// librabbitmq reported an unexpected state or frame.
        public static let protocolError = Code(.protocolError)
        /// A publish stayed unconfirmed past the publisher's confirm timeout while the broker had
        /// not said it was blocked: the connection is treated as dead (the message may or may not
        /// have been taken).
        public static let confirmTimeout = Code(.confirmTimeout)
    }

    /// The kind of failure.
    public let code: Code
    /// Detail for logs (never holds secrets).
    public let message: String
    /// The AMQP reply code when the broker closed something (320, 404, 406, …).
    public let replyCode: UInt16?

    init(_ code: Code, _ message: String, replyCode: UInt16? = nil) {
        self.code = code
        self.message = message
        self.replyCode = replyCode
    }

    public var description: String {
        if let replyCode { return "AMQPError.\(code) (\(replyCode)): \(message)" }
        return "AMQPError.\(code): \(message)"
    }

    static func invalidURL(_ message: String) -> AMQPError { AMQPError(.invalidURL, message) }
    static func invalidSettings(_ message: String) -> AMQPError { AMQPError(.invalidSettings, message) }
    static func connectionFailed(_ message: String) -> AMQPError { AMQPError(.connectionFailed, message) }
    static func loginFailed(_ message: String) -> AMQPError { AMQPError(.loginFailed, message) }
    static func connectionLost(_ message: String, replyCode: UInt16? = nil) -> AMQPError {
        AMQPError(.connectionLost, message, replyCode: replyCode)
    }
    static func channelClosed(_ message: String, replyCode: UInt16) -> AMQPError {
        AMQPError(.channelClosed, message, replyCode: replyCode)
    }
    static func consumerCancelledByServer(_ queue: String) -> AMQPError {
        AMQPError(.consumerCancelledByServer, "the broker cancelled the consumer on queue '\(queue)'")
    }
    /// A publish the broker refused (basic.nack).
    public static func nacked() -> AMQPError { AMQPError(.nacked, "the broker nacked the publish") }
    static func returned(_ message: String, replyCode: UInt16) -> AMQPError {
        AMQPError(.returned, message, replyCode: replyCode)
    }
    static func closed(_ what: String) -> AMQPError { AMQPError(.closed, "\(what) is closed") }
    static func protocolError(_ message: String) -> AMQPError { AMQPError(.protocolError, message) }
    static func confirmTimeout(_ timeout: Duration) -> AMQPError {
        AMQPError(.confirmTimeout, "no publisher confirm within \(timeout); the connection is dropped")
    }
}
