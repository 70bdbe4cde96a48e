/// A small, careful HTTP/1.1 server side: Content-Length bodies, keep-alive, `Expect:
/// 100-continue`, one request at a time per connection (pipelined requests wait their turn).
final class HTTP1Session {
    static let maxHeaderBytes = 64 * 1024
    static let maxBodyBytes = 1 << 20

    private unowned let connection: ClientConnection
    private var buffer: [UInt8] = []
    private var awaitingResponse = false
    private var sentContinue = false

    init(connection: ClientConnection) { self.connection = connection }

    func receive(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        process()
    }

    private func process() {
        while !awaitingResponse, !connection.isClosed, !connection.closeAfterFlush {
            guard let headerEnd = findHeaderEnd() else {
                if buffer.count > Self.maxHeaderBytes { fail(431, "request header too large") }
                return
            }
            guard var request = parseHead(buffer[0..<headerEnd]) else { fail(400, "malformed request"); return }
            if request.header("transfer-encoding") != nil { fail(501, "chunked bodies are not supported; send Content-Length"); return }
            let lengthText = request.header("content-length") ?? "0"
            guard let length = Int(lengthText.trimmingSpaces), length >= 0 else { fail(400, "bad Content-Length"); return }
            guard length <= Self.maxBodyBytes else { fail(413, "body too large"); return }
            let total = headerEnd + 4 + length
            guard buffer.count >= total else {
                if !sentContinue, request.header("expect")?.lowercased() == "100-continue" {
                    sentContinue = true
                    connection.enqueue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                }
                return
            }
            request.body = Array(buffer[(headerEnd + 4)..<total])
            buffer.removeFirst(total)
            sentContinue = false
            let connectionHeader = request.header("connection")?.lowercased() ?? ""
            let keepAlive = !connectionHeader.contains("close")
            awaitingResponse = true
            let response = connection.service.handle(request)
            if response.delay > .zero {
                connection.loop.schedule(after: response.delay) { [weak self] in
                    self?.respond(response, keepAlive: keepAlive)
                    self?.connection.produceAndFlush()
                }
            } else {
                respond(response, keepAlive: keepAlive)
            }
        }
    }

    private func respond(_ response: HTTPResponse, keepAlive: Bool) {
        guard !connection.isClosed else { return }
        var head = "HTTP/1.1 \(response.status) \(HTTPResponse.reason(response.status))\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        head += "content-length: \(response.body.count)\r\n"
        if !keepAlive { head += "connection: close\r\n" }
        head += "\r\n"
        if response.cut {
            connection.enqueue(Array(head.utf8) + response.body.prefix(response.body.count / 2))
            connection.closeAfterFlush = true
            return
        }
        connection.enqueue(Array(head.utf8) + response.body)
        awaitingResponse = false
        if !keepAlive { connection.closeAfterFlush = true } else { process() }
    }

    private func fail(_ status: Int, _ message: String) {
        respond(.json(status, "{\"error\":{\"code\":\(status),\"message\":\(JSONValue.quoted(message))}}"), keepAlive: false)
    }

    private func findHeaderEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func parseHead(_ head: ArraySlice<UInt8>) -> HTTPRequest? {
        guard let text = String(validating: head, as: UTF8.self) else { return nil }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)[...]
        guard let requestLine = lines.popFirst() else { return nil }
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
        var request = HTTPRequest()
        request.method = String(parts[0])
        request.target = String(parts[1])
        if request.target.hasPrefix("http://") || request.target.hasPrefix("https://") {
            // Absolute form: keep the path.
            let afterScheme = request.target.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
            request.target = afterScheme.count == 4 ? "/" + afterScheme[3] : "/"
        }
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].lowercased()
            let value = String(line[line.index(after: colon)...].trimmingSpacesSubstring)
            request.headers.append((name, value))
        }
        if parts[2] == "HTTP/1.0", request.header("connection")?.lowercased() != "keep-alive" {
            request.headers.append(("connection", "close"))
        }
        return request
    }
}

extension Substring {
    var trimmingSpacesSubstring: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
