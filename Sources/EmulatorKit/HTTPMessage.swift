import Glibc

/// A request as both HTTP/1.1 and HTTP/2 deliver it.
struct HTTPRequest: Sendable {
    var method: String = ""
    /// Path with query string.
    var target: String = ""
    /// Header names lowercased.
    var headers: [(String, String)] = []
    var body: [UInt8] = []

    func header(_ name: String) -> String? { headers.first(where: { $0.0 == name })?.1 }

    var path: Substring {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target[...] }
        return target[..<mark]
    }

    /// Decoded query parameters.
    var query: [String: String] {
        let parts = target.split(separator: "?", maxSplits: 1)
        guard parts.count == 2 else { return [:] }
        return FormDecoding.decode(String(parts[1]))
    }
}

/// A response plus how long to hold it back (emulated latency).
struct HTTPResponse: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    var delay: Duration = .zero
    /// Fault: the answer stops after its headers and half its body (the request was processed).
    var cut = false

    static func json(_ status: Int, _ text: String, extraHeaders: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("content-type", "application/json; charset=UTF-8")] + extraHeaders, body: Array(text.utf8))
    }

    static func error(_ e: FCMError) -> HTTPResponse {
        json(e.httpStatus, e.body, extraHeaders: e.retryAfter.map { [("retry-after", String($0))] } ?? [])
    }

    /// What Google's front end answers for a path no API serves: an HTML page, not an API error
    /// (so a wrong `--fcm-url` path is seen as it is in production).
    static func frontEndNotFound(path: String) -> HTTPResponse {
        let safePath = String(path.prefix(200).unicodeScalars.filter { $0.isASCII && $0 != "<" && $0 != ">" && $0 != "&" })
        let page = "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <title>Error 404 (Not Found)!!1</title>\n"
            + "  <p><b>404.</b> <ins>That's an error.</ins>\n  <p>The requested URL <code>\(safePath)</code> was not found on this server."
            + "  <ins>That's all we know.</ins>\n"
        return HTTPResponse(status: 404, headers: [("content-type", "text/html; charset=UTF-8")], body: Array(page.utf8))
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 413: return "Payload Too Large"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }
}

/// Monotonic time in nanoseconds.
enum MonotonicClock {
    static func nowNanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
