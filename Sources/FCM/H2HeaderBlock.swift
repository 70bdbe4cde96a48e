import CNGHTTP2

/// The header fields of a request as nghttp2 takes them: `:method` (the request's), `:scheme`,
/// `:authority`, `:path`, then the request's header lines split at the first colon with
/// lower-cased names (connection-specific and empty ones dropped). Built once per URL and header
/// set and reused by the requests that share them (nghttp2 copies the fields on submit).
final class H2HeaderBlock {
    let url: String
    let lines: [String]
    let method: String
    let origin: H2Origin
    private let storage: UnsafeMutableBufferPointer<UInt8>
    private var fields: [nghttp2_nv] = []

    private static let dropped: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding",
                                               "upgrade", "host", "te", "expect"]

    init?(url: String, lines: [String], method: String) {
        guard let (origin, path) = H2Origin.parse(url) else { return nil }
        self.url = url
        self.lines = lines
        self.method = method
        self.origin = origin
        var pairs: [(String, String)] = [(":method", method), (":scheme", origin.tls ? "https" : "http"),
                                         (":authority", origin.authority), (":path", path)]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" })
            guard !name.isEmpty, !value.isEmpty, !Self.dropped.contains(name) else { continue }
            pairs.append((name, String(value)))
        }
        let total = pairs.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }
        storage = .allocate(capacity: max(total, 1))
        var offset = 0
        var ranges: [(Int, Int, Int, Int)] = []
        for (name, value) in pairs {
            let nameStart = offset
            for byte in name.utf8 { storage[offset] = byte; offset += 1 }
            let valueStart = offset
            for byte in value.utf8 { storage[offset] = byte; offset += 1 }
            ranges.append((nameStart, valueStart - nameStart, valueStart, offset - valueStart))
        }
        let base = storage.baseAddress!
        fields = ranges.map {
            nghttp2_nv(name: base + $0.0, value: base + $0.2, namelen: $0.1, valuelen: $0.3,
                       flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }
    }

    deinit { storage.deallocate() }

    /// Calls `body` with the nghttp2 field array.
    func withFields<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        fields.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
    }
}
