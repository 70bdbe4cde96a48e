/// Tunables of the HTTP/2 transports: `CurlTransport` (libcurl) and `H2Transport` (libnghttp2,
/// which has one loop thread and ignores `loops` and `loopIdleWait`).
public struct CurlTransportConfiguration: Sendable {
    /// Maximum requests in flight across the whole transport (callers wait asynchronously beyond).
    public var maxInFlight: Int = 2000
    /// Number of curl loops: each is one thread running one curl multi handle (a "lane" is the worker's consumer/publisher pair, not this).
    public var loops: Int = 1
    /// HTTP/2 streams per connection (FCM and the Node SDK use ≤ 100).
    public var streamsPerConnection: Int = 100
    /// TCP + TLS connect timeout.
    public var connectTimeout: Duration = .seconds(10)
    /// Whole-request timeout.
    public var requestTimeout: Duration = .seconds(30)
    /// A PEM CA bundle to trust instead of the system's (e.g. the emulator's dev CA).
    public var caFile: String? = nil
    /// TLS peer and host verification. On by default; turning it off is for debugging only.
    public var verifyTLS: Bool = true
    /// `http://` URLs speak HTTP/2 with prior knowledge (h2c: the emulator, a local FCM fake);
    /// false: HTTP/1.1, as most token endpoints served without TLS do (the token transport).
    public var cleartextHTTP2: Bool = true
    /// Largest response body kept. FCM's and the token endpoint's answers are well under 2 KiB;
    /// a larger one is garbage (a proxy page, a misdirected URL) and fails the request as a
    /// transport error (`TRANSPORT_RESPONSE_TOO_LARGE`, retryable) instead of being buffered.
    public var maxResponseBytes: Int = 65_536
    /// Longest sleep of a loop in `curl_multi_poll` when neither a submit nor one of libcurl's
    /// timers wakes it. Tests raise it, so that a lost wake-up shows as a hang, not a delay.
    var loopIdleWait: Duration = .seconds(1)

    public init() {}

    /// In-flight requests each loop carries.
    var perLoopConcurrency: Int { max(1, (maxInFlight + loops - 1) / max(loops, 1)) }
    /// Connections each loop may open to one host so that its share of requests fits.
    var connectionsPerHost: Int {
        let streams = max(1, min(streamsPerConnection, 100))
        return max(1, (perLoopConcurrency + streams - 1) / streams)
    }
}
