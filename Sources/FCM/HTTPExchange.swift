/// One HTTP request as the FCM client needs it: a method, a URL, headers and a body.
public struct HTTPRequest: Sendable {
    public var url: String
    /// Header lines without CR LF, e.g. `Content-Type: application/json`.
    public var headers: [String]
    public var body: [UInt8]
    /// `POST` (every send and service-account token fetch) or `GET` (a metadata-server token).
    public var method: String

    public init(url: String, headers: [String], body: [UInt8], method: String = "POST") {
        self.url = url
        self.headers = headers
        self.body = body
        self.method = method
    }
}

/// The answer to an `HTTPRequest`: status, body, and the one header the client reads.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    /// The raw `Retry-After` header value, if present.
    public var retryAfter: String?

    public init(status: Int, body: [UInt8], retryAfter: String? = nil) {
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
    }
}

/// A request that got no HTTP response. Carries the transport's short description, never a header.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for classification.
    public enum Kind: Sendable, Hashable {
        /// No answer in time for a request that had not been fully written (it waited for a
        /// connection or a stream, or its body was still going out): FCM never had it whole.
        case timeout
        /// No answer in time for a request that had been fully written: FCM may have taken it
        /// and delivered the message (a resend may be a second push).
        case timeoutAfterSend
        /// No connection could be made: the request was never sent.
        case connectFailed
        /// The connection went away (GOAWAY, stream reset, peer closed) before the response.
        case connectionLost
        /// TLS verification or handshake failure: a configuration problem.
        case tls
        /// The response body passed the transport's `maxResponseBytes`: garbage, not read further.
        case responseTooLarge
        /// The transport is shut down.
        case shutdown
        /// Anything else the transport reports.
        case other
    }

    public let kind: Kind
    public let message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    /// A stable upper-case code for outcomes and metrics, e.g. `TRANSPORT_TIMEOUT`.
    public var code: String {
        switch kind {
        case .timeout: "TRANSPORT_TIMEOUT"
        case .timeoutAfterSend: "TRANSPORT_TIMEOUT_AFTER_SEND"
        case .connectFailed: "TRANSPORT_CONNECT_FAILED"
        case .connectionLost: "TRANSPORT_CONNECTION_LOST"
        case .tls: "TRANSPORT_TLS"
        case .responseTooLarge: "TRANSPORT_RESPONSE_TOO_LARGE"
        case .shutdown: "TRANSPORT_SHUTDOWN"
        case .other: "TRANSPORT_ERROR"
        }
    }

    public var description: String { "\(code): \(message)" }
}

/// Sends HTTP requests; the seam between FCMClient / AccessTokenSource and libnghttp2 or libcurl.
/// One requirement, `start`; `send` is `start` awaited.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and calls `completion` with the answer once, from any thread, with no
    /// task waiting meanwhile when the transport can (a request in flight then costs its
    /// callback, not a suspended task).
    func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void)
}

extension HTTPTransport {
    /// `start`, awaited (the token fetch, the FCM client's slow paths, tests).
    public func send(_ request: HTTPRequest) async -> Result<HTTPResponse, TransportError> {
        await withCheckedContinuation { continuation in
            start(request) { continuation.resume(returning: $0) }
        }
    }
}
