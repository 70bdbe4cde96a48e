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
    /// The server's budget for request bodies held at once was exhausted and this body was
    /// discarded (`body` is empty): answer 503.
    public var overBudget = false

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
    /// Headers beside `Content-Type` (`Retry-After`, the CORS headers), in order.
    public var headers: [(name: String, value: String)] = []

    public init(status: Int, contentType: String = "application/json", body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    public init(status: Int, contentType: String = "application/json", text: String) {
        self.init(status: status, contentType: contentType, body: Array(text.utf8))
    }

    /// The response with `name: value` added.
    public func adding(_ name: String, _ value: String) -> HTTPResponse {
        var response = self
        response.headers.append((name, value))
        return response
    }
}

/// What a handler answers: a response right away (on the server thread), or work to await
/// (the connection is suspended meanwhile, freeing the server thread).
public enum HTTPReply: Sendable {
    case now(HTTPResponse)
    case later(@Sendable () async -> HTTPResponse)

    /// The same reply with `transform` applied to its response, whenever it comes.
    public func map(_ transform: @escaping @Sendable (HTTPResponse) -> HTTPResponse) -> HTTPReply {
        switch self {
        case .now(let response): .now(transform(response))
        case .later(let work): .later { transform(await work()) }
        }
    }
}

/// Serves requests for `MicroHTTPServer`. `respond` runs on a server thread: keep it short.
public protocol HTTPHandler: Sendable {
    /// Called once the headers are in, before any of the body is read (`request.body` is
    /// empty): a response here is sent at once and the body is never read (e.g. a wrong key).
    func admit(_ request: HTTPRequest) -> HTTPResponse?
    func respond(to request: HTTPRequest) -> HTTPReply
}

extension HTTPHandler {
    public func admit(_ request: HTTPRequest) -> HTTPResponse? { nil }
}
