import Glibc
import OSThread

/// One request travelling through the HTTP/2 transport: the request, its prepared header block,
/// its deadline, and the response as it arrives. Touched only by its engine's thread after
/// submission; `finish` calls its completion exactly once (later calls do nothing).
final class H2Exchange: @unchecked Sendable {
    typealias Completion = @Sendable (Result<HTTPResponse, TransportError>) -> Void

    let request: HTTPRequest
    /// Monotonic nanoseconds after which the request fails with `.timeout`.
    let deadline: UInt64
    private var completion: Completion?
    /// Set when the engine routes the request.
    var headers: H2HeaderBlock?
    var status = 0
    var retryAfter: String?
    var responseBody: [UInt8] = []
    /// Bytes of `request.body` handed to nghttp2 so far.
    var bodySent = 0
    /// Times the request went back to its pool after a connection refused it unprocessed (GOAWAY).
    var requeues = 0

    init(request: HTTPRequest, deadline: UInt64, completion: @escaping Completion) {
        self.request = request
        self.deadline = deadline
        self.completion = completion
    }

    var isFinished: Bool { completion == nil }

    /// Calls the completion with `result`; only the first call counts.
    func finish(_ result: Result<HTTPResponse, TransportError>) {
        guard let completion else { return }
        self.completion = nil
        responseBody = []
        completion(result)
    }

    /// Ends a request whose stream or connection went away, or whose deadline passed, before the
    /// answer was complete: when the status already arrived and said 2xx, the server accepted
    /// the request (FCM took the message), so it succeeds with whatever body came, since failing
    /// it would have the message sent again; otherwise it fails with `error`.
    func finishInterrupted(_ error: TransportError) {
        if (200..<300).contains(status) { succeed() } else { finish(.failure(error)) }
    }

    /// Resumes with the response collected so far.
    func succeed() {
        let body = responseBody
        finish(.success(HTTPResponse(status: status, body: body, retryAfter: retryAfter)))
    }
}

/// CLOCK_MONOTONIC in nanoseconds, the time base of every deadline of the HTTP/2 transport.
enum H2Clock {
    static func now() -> UInt64 { PollLoop.now() }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, attoseconds / 1_000_000_000))
    }
}
