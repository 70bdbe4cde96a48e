import CMicroHTTPD
import FoundationEssentials
import Synchronization

/// What the C callbacks reach through MHD's `cls` pointer.
final class ServerContext: Sendable {
    let handler: any HTTPHandler
    let maxBodyBytes: Int
    let capturedHeaders: [String]
    /// Connections suspended right now (awaiting a handler's asynchronous work), counted before
    /// the suspension, so that `MicroHTTPServer.stop` never stops the daemon with one suspended.
    let suspended = Atomic<Int>(0)
    /// Set by `MicroHTTPServer.stop`: from then on a request is answered at once (503), never
    /// suspended, since libmicrohttpd aborts the process when stopped with a suspended connection.
    let stopping = Atomic<Bool>(false)
    let asynchronousTimeout: Duration
    /// Bytes of request bodies held right now, across all requests, and the most allowed.
    let buffered = Atomic<Int>(0)
    let maxBufferedBytes: Int
    let deadlines: RequestDeadlines

    init(handler: any HTTPHandler, configuration: MicroHTTPServer.Configuration) {
        self.handler = handler
        maxBodyBytes = configuration.maxBodyBytes
        maxBufferedBytes = configuration.maxBufferedBytes
        deadlines = RequestDeadlines(deadline: configuration.requestDeadline, connectionLimit: max(1, configuration.connectionLimit))
        asynchronousTimeout = configuration.asynchronousTimeout
        capturedHeaders = configuration.capturedHeaders.map { $0.lowercased() }
    }
}

/// One request in progress, reached through MHD's per-connection `con_cls` pointer. The body is
/// only touched on the connection's server thread; the response may be set from a task.
final class RequestState: @unchecked Sendable {
    var request: HTTPRequest
    var started = false
    /// Body bytes counted in the server's `buffered` budget (given back when the request ends).
    var reserved = 0
    let response = Mutex<HTTPResponse?>(nil)

    init(request: HTTPRequest) { self.request = request }
}

/// Every value of the request header `name` (libmicrohttpd keeps each repeated header).
private func headerValues(_ connection: OpaquePointer, _ name: String) -> [String] {
    final class Found { let name: String; var values: [String] = []; init(_ name: String) { self.name = name } }
    let found = Found(name)
    withExtendedLifetime(found) {
        _ = MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
            guard let cls, let key else { return .YES }
            let found = Unmanaged<Found>.fromOpaque(cls).takeUnretainedValue()
            if String(cString: key).lowercased() == found.name.lowercased() { found.values.append(value.map { String(cString: $0) } ?? "") }
            return .YES
        }, Unmanaged.passUnretained(found).toOpaque())
    }
    return found.values
}

/// A connection pointer carried to the task that resumes it.
struct ConnectionHandle: @unchecked Sendable {
    let raw: OpaquePointer
}

let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let conCls, let uploadDataSize else { return .NO }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    guard let stateRaw = conCls.pointee else {
        // First call: headers are in. Capture what the handler needs.
        var path = url.map { String(cString: $0) } ?? "/"
        if let q = path.firstIndex(of: "?") { path = String(path[..<q]) }
        var headers: [String: String] = [:]
        for name in server.capturedHeaders {
            if let value = MHD_lookup_connection_value(connection, .HEADER_KIND, name) { headers[name] = String(cString: value) }
        }
        // A request whose body length two headers disagree on is refused before its body is
        // read and its connection closed (RFC 9112 §6.3): a proxy in front may have framed it
        // the other way, and the leftover bytes would be read as a request of their own.
        if let problem = BodyFraming.problem(contentLengths: headerValues(connection, "Content-Length"),
                                            transferEncodings: headerValues(connection, "Transfer-Encoding")) {
            return queue(HTTPResponse(status: 400, text: #"{"error":{"code":"BAD_FRAMING","field":"$","message":"\#(problem)"}}"#)
                .adding("Connection", "close"), on: connection)
        }
        var request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET", path: path, headers: headers)
        // Answered before a byte of the body is read: refused by the handler (a wrong key), or
        // declaring a body over the limit.
        if let refusal = server.handler.admit(request) { return queue(refusal, on: connection) }
        if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
           let length = Int(String(cString: declared)), length > server.maxBodyBytes {
            request.bodyTooLarge = true
            if case .now(let response) = server.handler.respond(to: request) { return queue(response, on: connection) }
            return queue(HTTPResponse(status: 413, text: #"{"error":{"code":"BODY_TOO_LARGE","field":"$","message":"body too large"}}"#),
                         on: connection)
        }
        let state = RequestState(request: request)
        conCls.pointee = Unmanaged.passRetained(state).toOpaque()
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(stateRaw).takeUnretainedValue()
    if uploadDataSize.pointee > 0 {
        let count = uploadDataSize.pointee
        if !state.request.bodyTooLarge && !state.request.overBudget, let uploadData {
            if state.request.body.count + count > server.maxBodyBytes {
                state.request.bodyTooLarge = true
                state.release(server)
            } else if server.buffered.add(count, ordering: .relaxed).newValue > server.maxBufferedBytes {
                server.buffered.subtract(count, ordering: .relaxed)
                state.request.overBudget = true
                state.release(server)
            } else {
                state.reserved += count
                uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                    state.request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                }
            }
        }
        uploadDataSize.pointee = 0
        return .YES
    }
    if let response = state.response.withLock({ $0 }) { return queue(response, on: connection) }
    if state.started { return .YES }  // resumed spuriously: keep waiting
    state.started = true
    server.deadlines.arrived(connection)
    switch server.handler.respond(to: state.request) {
    case .now(let response):
        return queue(response, on: connection)
    case .later(let work):
        // Counted, then the stop read: either `stop` sees this count and waits for the answer, or
        // this sees the stop and answers now (both sequentially consistent, so one of them sees
        // the other). A request may come after `stop` began (a kept-alive or a new connection).
        server.suspended.add(1, ordering: .sequentiallyConsistent)
        guard !server.stopping.load(ordering: .sequentiallyConsistent) else {
            server.suspended.subtract(1, ordering: .releasing)
            return queue(HTTPResponse(status: 503, text: #"{"error":{"code":"UNAVAILABLE","field":"$","message":"the server is stopping; retry later"}}"#)
                .adding("Retry-After", "5"), on: connection)
        }
        MHD_suspend_connection(connection)
        let handle = ConnectionHandle(raw: connection)
        // The first of the work and the timeout answers; the connection is resumed exactly once.
        let answer = SuspendedAnswer(state: state, connection: handle, server: server)
        let timeout = Task {
            try await Task.sleep(for: server.asynchronousTimeout)
            answer.give(HTTPResponse(status: 503, text: #"{"error":{"code":"TIMEOUT","field":"$","message":"not confirmed in time; retry later"}}"#)
                .adding("Retry-After", "5"))
        }
        Task {
            answer.give(await work())
            timeout.cancel()
        }
        return .YES
    }
}

let requestCompleted: MHD_RequestCompletedCallback = { cls, connection, conCls, _ in
    guard let cls else { return }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    if let connection { server.deadlines.answered(connection) }
    guard let conCls, let raw = conCls.pointee else { return }
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    state.release(server)
    conCls.pointee = nil
}

let connectionNotified: MHD_NotifyConnectionCallback = { cls, connection, _, toe in
    guard let cls, let connection else { return }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    if toe == MHD_ConnectionNotificationCode(rawValue: 0) { server.deadlines.opened(connection) } else { server.deadlines.closed(connection) }
}

extension RequestState {
    /// Drops the body and gives its bytes back to the server's budget.
    func release(_ server: ServerContext) {
        request.body = []
        server.buffered.subtract(reserved, ordering: .relaxed)
        reserved = 0
    }
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
    var body = response.body
    let made = body.withUnsafeMutableBytes { buffer in
        MHD_create_response_from_buffer(buffer.count, buffer.baseAddress, .RESPMEM_MUST_COPY)
    }
    guard let made else { return .NO }
    _ = MHD_add_response_header(made, "Content-Type", response.contentType)
    for (name, value) in response.headers { _ = MHD_add_response_header(made, name, value) }
    let result = MHD_queue_response(connection, UInt32(response.status), made)
    MHD_destroy_response(made)
    return result
}

/// Answers a suspended connection once: whichever of the work and its timeout comes first.
private final class SuspendedAnswer: Sendable {
    private let given = Atomic<Bool>(false)
    private let state: RequestState
    private let connection: ConnectionHandle
    private let server: ServerContext

    init(state: RequestState, connection: ConnectionHandle, server: ServerContext) {
        self.state = state
        self.connection = connection
        self.server = server
    }

    func give(_ response: HTTPResponse) {
        guard !given.exchange(true, ordering: .acquiringAndReleasing) else { return }
        state.response.withLock { $0 = response }
        MHD_resume_connection(connection.raw)
        server.suspended.subtract(1, ordering: .releasing)
    }
}
