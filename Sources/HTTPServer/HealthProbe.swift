import CCurl

/// One blocking `GET` with libcurl, for `push-connector health`: the status code, or why there
/// is none. Only http:// and https:// (no redirects followed, TLS verified), the body discarded.
package enum HealthProbe {
    /// The HTTP status of `GET url`, or a one-line reason it could not be had within `timeout`.
    package static func get(_ url: String, timeoutMilliseconds: Int, caFile: String? = nil) -> Result<Int, HealthProbeError> {
        guard let easy = curl_easy_init() else { return .failure(HealthProbeError(message: "curl_easy_init failed")) }
        defer { curl_easy_cleanup(easy) }
        url.withCString { _ = pc_curl_easy_setopt_ptr(easy, CURLOPT_URL, $0) }
        "http,https".withCString { _ = pc_curl_easy_setopt_ptr(easy, CURLOPT_PROTOCOLS_STR, $0) }
        pc_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMilliseconds)
        pc_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        caFile?.withCString { _ = pc_curl_easy_setopt_ptr(easy, CURLOPT_CAINFO, $0) }
        pc_curl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        pc_curl_easy_setopt_write(easy, CURLOPT_WRITEFUNCTION) { _, size, count, _ in size * count }
        let code = curl_easy_perform(easy)
        guard code == CURLE_OK else {
            return .failure(HealthProbeError(message: String(cString: curl_easy_strerror(code))))
        }
        var status = 0
        pc_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return .success(status)
    }
}

/// Why a health probe got no HTTP status (refused, timed out, bad URL).
package struct HealthProbeError: Error, Sendable {
    package let message: String
}
