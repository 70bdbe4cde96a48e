/// An HTTP request as a handler sees it: method, path (without query), the headers the server
/// was asked to capture (lower-case names), and the body.
public struct HTTPRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [String: String]
    public var body: [UInt8]
    /// The body was larger than the server's limit and was discarded (`body` is empty):
    /// answer 413.
    public var bodyTooLarge: Bool

    public init(method: String, path: String, headers: [String: String] = [:], body: [UInt8] = [], bodyTooLarge: Bool = false) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.bodyTooLarge = bodyTooLarge
    }
}

/// An HTTP response: status, content type, body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int, contentType: String = "application/json", body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    public init(status: Int, contentType: String = "application/json", text: String) {
        self.init(status: status, contentType: contentType, body: Array(text.utf8))
    }
}

/// What a handler answers: a response right away (on the server thread), or work to await
/// (the connection is suspended meanwhile, freeing the server thread).
public enum HTTPReply: Sendable {
    case now(HTTPResponse)
    case later(@Sendable () async -> HTTPResponse)
}

/// Serves requests for `MicroHTTPServer`. `respond` runs on a server thread: keep it short.
public protocol HTTPHandler: Sendable {
    func respond(to request: HTTPRequest) -> HTTPReply
}
