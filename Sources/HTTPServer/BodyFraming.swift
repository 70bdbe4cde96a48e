/// The rule for a request's body length when its headers could disagree (RFC 9112 §6.3): a
/// `Transfer-Encoding` beside a `Content-Length`, or `Content-Length` values that differ, are
/// refused, since a proxy in front may have framed the request the other way and the bytes left
/// over would then be read as a request of their own (request smuggling). Repeated equal values
/// (`5, 5`) are one length, as the RFC allows.
enum BodyFraming {
    /// Nil when the body is framed one way only, else why not (for a 400 answer).
    static func problem(contentLengths: [String], transferEncodings: [String]) -> String? {
        if !transferEncodings.isEmpty && !contentLengths.isEmpty {
            return "both Transfer-Encoding and Content-Length: send one"
        }
        let lengths = Set(contentLengths.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: " \t") } })
        if lengths.count > 1 { return "Content-Length values that differ" }
        if let length = lengths.first, length.isEmpty || !length.allSatisfy(\.isASCIIDigit) { return "a Content-Length that is not a number" }
        return nil
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

private extension Substring {
    func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}
