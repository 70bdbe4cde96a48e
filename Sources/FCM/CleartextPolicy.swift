/// Which URLs may be reached over plain `http://`: only loopback hosts (127.0.0.0/8, `::1`,
/// `localhost`), where an emulator runs, unless the operator allows it explicitly
/// (`--allow-insecure-http`). Anything else carries access tokens and must use `https://`.
public enum CleartextPolicy {
    /// Why `url` may not be used, nil when it may: `https://` always, `http://` on loopback or
    /// with `allowInsecureHTTP`, no other scheme.
    public static func problem(url: String, allowInsecureHTTP: Bool) -> String? {
        let lowered = url.lowercased()
        if lowered.hasPrefix("https://") { return nil }
        guard lowered.hasPrefix("http://") else { return "must be an https:// URL" }
        if allowInsecureHTTP { return nil }
        guard let host = host(of: url), isLoopback(host: host) else {
            return "http:// is allowed only for a loopback host (127.0.0.0/8, ::1, localhost); use https:// "
                + "or pass --allow-insecure-http"
        }
        return nil
    }

    /// The host of an `http(s)://` URL, without brackets, user info or port.
    static func host(of url: String) -> String? {
        guard let schemeEnd = url.firstRange(of: "://") else { return nil }
        var authority = url[schemeEnd.upperBound...]
        if let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { authority = authority[..<end] }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        if let colon = authority.firstIndex(of: ":") { authority = authority[..<colon] }
        return String(authority)
    }

    /// True for `localhost`, `::1` and dotted-quad addresses in 127.0.0.0/8.
    static func isLoopback(host: String) -> Bool {
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered == "localhost." || lowered == "::1" || lowered == "0:0:0:0:0:0:0:1" { return true }
        let octets = lowered.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return false }
        let values = octets.map { part -> Int? in
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber) else { return nil }
            return Int(part)
        }
        guard values.allSatisfy({ $0 != nil && $0! <= 255 }) else { return false }
        return values[0] == 127
    }
}
