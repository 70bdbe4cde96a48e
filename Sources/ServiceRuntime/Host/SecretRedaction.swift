import PushCore

/// Masks the secrets of a connection string before it reaches a log line, an error or `--check`:
/// the password of a URL's user info, every query parameter whose name (percent-decoded) holds
/// "password" (`password`, `sslpassword`, `p%61ssword`), a query parameter without `=` (a
/// malformed `password%3D…` that a reader could still decode), and the same keywords of a libpq
/// keyword/value string (`host=db password='a b'`). Anything it cannot read is masked whole.
///
/// A comma-separated list of URLs (a cluster's nodes) is masked URL by URL; when a piece of it is
/// no URL (a raw comma inside a password cut it), the whole string is masked as one URL.
public enum SecretRedaction {
    public static func redact(_ value: String) -> String {
        guard value.contains("://") else { return keywordValue(value) }
        let pieces = value.split(separator: ",", omittingEmptySubsequences: false)
        if pieces.count > 1, pieces.allSatisfy({ $0.contains("://") }) {
            return pieces.map { url(Substring($0)) }.joined(separator: ",")
        }
        return url(Substring(value))
    }

    private static func url(_ text: Substring) -> String {
        guard let schemeEnd = text.firstRange(of: "://") else { return "***" }
        var head = String(text[..<schemeEnd.upperBound])
        var rest = text[schemeEnd.upperBound...]
        // user:password@ up to the LAST '@': a password may hold one, or an unencoded '/', '?'.
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            head += userInfo.firstIndex(of: ":").map { String(userInfo[..<$0]) + ":***" } ?? String(userInfo)
            rest = rest[at...]
        }
        guard let query = rest.firstIndex(of: "?") else { return head + rest }
        let parameters = rest[rest.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false)
        return head + rest[...query] + parameters.map(maskedParameter).joined(separator: "&")
    }

    private static func maskedParameter(_ pair: Substring) -> String {
        guard let equals = pair.firstIndex(of: "=") else { return pair.isEmpty ? "" : "***" }
        let key = pair[..<equals]
        guard let decoded = PercentEncoding.decode(key), !isSecretKey(decoded) else { return key + "=***" }
        return String(pair)
    }

    /// libpq's keyword/value form: `key = value` pairs, values bare or single-quoted with `\`
    /// escapes. A string with no `=` at all (a file path) is returned as it is.
    private static func keywordValue(_ text: String) -> String {
        guard text.contains("=") else { return text }
        let characters = Array(text)
        var out = "", i = 0
        func skipSpaces() { while i < characters.count, characters[i].isWhitespace { out.append(characters[i]); i += 1 } }
        while true {
            skipSpaces()
            guard i < characters.count else { return out }
            var key = ""
            while i < characters.count, characters[i] != "=", !characters[i].isWhitespace { key.append(characters[i]); i += 1 }
            out += key
            skipSpaces()
            guard i < characters.count, characters[i] == "=" else { return "***" }
            out.append("="); i += 1
            skipSpaces()
            var value = ""
            if i < characters.count, characters[i] == "'" {
                value.append("'"); i += 1
                var closed = false
                while i < characters.count {
                    let c = characters[i]; value.append(c); i += 1
                    if c == "\\", i < characters.count { value.append(characters[i]); i += 1 } else if c == "'" { closed = true; break }
                }
                guard closed else { return "***" }
            } else {
                while i < characters.count, !characters[i].isWhitespace { value.append(characters[i]); i += 1 }
            }
            out += isSecretKey(key) ? "***" : value
        }
    }

    private static func isSecretKey(_ key: String) -> Bool { key.lowercased().contains("password") }
}
