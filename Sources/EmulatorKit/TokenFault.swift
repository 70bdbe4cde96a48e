/// A fault requested by the prefix of a registration token.
enum TokenFault: Equatable, Sendable {
    case error(InjectedError)
    /// Fail `times` times with 503, then succeed (counted per token).
    case flaky(times: Int)
    /// Fail `times` times with 429 QUOTA_EXCEEDED (Retry-After: `--retry-after`), then succeed
    /// (counted per token).
    case quotaTimes(Int)
    /// Answer after `milliseconds`.
    case slow(milliseconds: Int)
    /// Take and record the first send of the token, answering it after `milliseconds`; answer
    /// later sends of it at once (counted per token): a path to FCM that went quiet, then came back.
    case slowOnce(milliseconds: Int)
    /// Accept and record the message, then cut the answer after its headers and half its body
    /// (HTTP/2: the stream is reset; HTTP/1.1: the connection closes).
    case cutAnswer

    /// The fault a token asks for, or nil for an ordinary token.
    static func parse(token: String) -> TokenFault? {
        if let n = numberedPrefix("flaky", in: token) { return .flaky(times: n) }
        if let n = numberedPrefix("slowonce", in: token) { return .slowOnce(milliseconds: n) }
        if let n = numberedPrefix("slow", in: token) { return .slow(milliseconds: n) }
        if let n = numberedPrefix("quota", in: token) { return .quotaTimes(n) }
        if token.hasPrefix("cut-") { return .cutAnswer }
        for kind in InjectedError.allCases where token.hasPrefix(kind.rawValue) { return .error(kind) }
        return nil
    }

    /// `<prefix><digits>-…` → the number.
    private static func numberedPrefix(_ prefix: String, in token: String) -> Int? {
        guard token.hasPrefix(prefix) else { return nil }
        let rest = token.utf8.dropFirst(prefix.utf8.count)
        let digits = rest.prefix(while: { $0 >= 48 && $0 <= 57 })
        guard !digits.isEmpty, digits.count <= 9, rest.dropFirst(digits.count).first == UInt8(ascii: "-") else { return nil }
        return Int(String(decoding: digits, as: UTF8.self))
    }
}
