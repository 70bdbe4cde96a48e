import CCurl

/// One request travelling through a curl loop: owns the C copy of the body and holds the header list
/// for the lifetime of the transfer, and accumulates the response. Touched only by its loop's
/// thread after submission.
final class CurlTransfer: @unchecked Sendable {
    typealias Completion = @Sendable (Result<HTTPResponse, TransportError>) -> Void

    let request: HTTPRequest
    private let completion: Completion
    private var body: UnsafeMutableRawBufferPointer?
    private var headers: CurlHeaderList?
    var headerList: UnsafeMutablePointer<curl_slist>? { headers?.list }
    var responseBody: [UInt8] = []
    var retryAfter: String?
    /// The largest body kept (the transport's `maxResponseBytes`), set before the transfer starts.
    var bodyLimit = Int.max
    /// Set when the body passed `bodyLimit`: the transfer was aborted.
    private(set) var oversized = false

    /// Appends a chunk of the body; false (abort the transfer) once it would exceed `bodyLimit`.
    func appendBody(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        guard responseBody.count + chunk.count <= bodyLimit else {
            oversized = true
            responseBody = []
            return false
        }
        responseBody.append(contentsOf: chunk)
        return true
    }

    init(request: HTTPRequest, completion: @escaping Completion) {
        self.request = request
        self.completion = completion
    }

    /// Copies the body and keeps `headers` (built from `request.headers`) until the transfer
    /// ends; returns the body pointer for CURLOPT_POSTFIELDS.
    func prepare(headers: CurlHeaderList) -> UnsafeRawPointer? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(request.body.count, 1), alignment: 1)
        request.body.withUnsafeBytes { source in
            if let base = source.baseAddress, source.count > 0 {
                buffer.baseAddress!.copyMemory(from: base, byteCount: source.count)
            }
        }
        body = buffer
        self.headers = headers
        return UnsafeRawPointer(buffer.baseAddress)
    }

    /// Frees the C resources and calls the completion.
    func finish(_ result: Result<HTTPResponse, TransportError>) {
        headers = nil
        body?.deallocate()
        body = nil
        completion(result)
    }

    /// Records a response header line; only `Retry-After` is kept.
    func headerLine(_ line: UnsafeBufferPointer<UInt8>) {
        if line.starts(with: Self.statusLinePrefix) {
            retryAfter = nil // a new response (after 1xx) starts
        } else if let value = Self.retryAfterValue(line) {
            retryAfter = value
        }
    }

    private static let statusLinePrefix = Array("HTTP/".utf8)
    private static let retryAfterName = Array("retry-after:".utf8)

    /// The value of a `Retry-After` header line (any case, surrounding blanks and CR LF removed).
    static func retryAfterValue(_ line: some Collection<UInt8>) -> String? {
        let name = retryAfterName
        // Most lines are other headers: refuse them before copying anything.
        guard line.count > name.count, let head = line.first, head | 0x20 == name[0] else { return nil }
        let bytes = Array(line)
        for index in name.indices {
            let byte = bytes[index]
            let lower = (65...90).contains(byte) ? byte + 32 : byte
            if lower != name[index] { return nil }
        }
        var value = bytes[name.count...]
        let blank: Set<UInt8> = [0x20, 0x09, 0x0D, 0x0A]
        while let first = value.first, blank.contains(first) { value = value.dropFirst() }
        while let last = value.last, blank.contains(last) { value = value.dropLast() }
        return String(decoding: value, as: UTF8.self)
    }
}

/// A curl header list (the request's lines plus `Expect:`), shared by the transfers that carry the
/// same header lines and freed when the last of them and the loop let go of it. Loop thread only.
final class CurlHeaderList {
    let headers: [String]
    let list: UnsafeMutablePointer<curl_slist>?

    init(_ headers: [String]) {
        self.headers = headers
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, header) }
        self.list = curl_slist_append(list, "Expect:")
    }

    deinit { curl_slist_free_all(list) }
}
