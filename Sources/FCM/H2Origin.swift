/// Where an HTTP/2 connection goes: scheme, host and port of a URL. Requests to the same origin
/// share a pool of connections.
struct H2Origin: Hashable, Sendable {
    /// https (TLS, ALPN h2) or http (h2c with prior knowledge).
    let tls: Bool
    /// Host name or IP literal, without IPv6 brackets.
    let host: String
    let port: Int
    /// The `:authority` pseudo-header: host and port as written in the URL.
    let authority: String

    var description: String { "\(host):\(port)" }

    /// Splits an absolute http(s) URL into its origin and the `:path` (path and query, "/" when
    /// empty); nil for anything else.
    static func parse(_ url: String) -> (origin: H2Origin, path: String)? {
        let tls: Bool
        let rest: Substring
        if url.hasPrefix("https://") {
            tls = true
            rest = url.dropFirst(8)
        } else if url.hasPrefix("http://") {
            tls = false
            rest = url.dropFirst(7)
        } else {
            return nil
        }
        let pathStart = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<pathStart]
        var path = String(rest[pathStart...])
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        var port = tls ? 443 : 80
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = value
        }
        guard !host.isEmpty else { return nil }
        return (H2Origin(tls: tls, host: String(host), port: port, authority: String(authority)), path)
    }
}
