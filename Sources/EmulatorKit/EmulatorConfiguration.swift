/// Settings of an emulator instance.
public struct EmulatorConfiguration: Sendable {
    /// Address to listen on (an IP literal or a host name).
    public var host: String = "127.0.0.1"
    /// Port to listen on; 0 picks a free port (read it from `FCMEmulator.port` after `start()`).
    public var port: Int = 0
    /// PEM certificate chain and key: both set → HTTPS with ALPN (h2, http/1.1); both nil → cleartext.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// Service-account JSON files whose keys may sign OAuth assertions.
    public var serviceAccountFiles: [String] = []
    /// When false, `messages:send` needs no bearer token (benchmarks, quick trials).
    public var requireAuth: Bool = true
    /// `expires_in` of issued access tokens.
    public var accessTokenLifetime: Duration = .seconds(3600)
    /// Fault: access tokens stop working after this long although `expires_in` promised more.
    public var accessTokenEarlyExpiry: Duration?
    /// `Retry-After` seconds sent with 429 and 503 answers.
    public var retryAfterSeconds: Int = 1
    /// Delay added to every `messages:send` answer (never blocks the event loop).
    public var latency: Latency = .none
    /// Fraction (0...1) of send answers that get `latency`; the others answer at once.
    public var latencyShare: Double = 1
    /// Fault: probability (0...1) of each kind of injected error on every send.
    public var errorRates: [InjectedError: Double] = [:]
    /// Fault: an HTTP/2 connection is closed with GOAWAY after this many requests.
    public var goawayEveryRequests: Int?
    /// Fault: sends per project per minute before 429 QUOTA_EXCEEDED.
    public var quotaPerMinute: Int?
    /// How many accepted messages are kept for inspection (a ring; counters are totals).
    public var recordCapacity: Int = 10_000
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised on HTTP/2 connections.
    public var maxConcurrentStreams: Int = 1000
    /// Also serve the Google metadata server's token endpoint (GCE, GKE Workload Identity):
    /// `GET /computeMetadata/v1/instance/service-accounts/default/token` with
    /// `Metadata-Flavor: Google` hands out access tokens `messages:send` accepts, no key needed.
    public var metadataServer: Bool = false

    public init() {}
}

extension EmulatorConfiguration: Equatable {
    public static func == (a: EmulatorConfiguration, b: EmulatorConfiguration) -> Bool {
        a.host == b.host && a.port == b.port && a.tlsCertificateFile == b.tlsCertificateFile && a.tlsKeyFile == b.tlsKeyFile
            && a.serviceAccountFiles == b.serviceAccountFiles && a.requireAuth == b.requireAuth
            && a.accessTokenLifetime == b.accessTokenLifetime && a.accessTokenEarlyExpiry == b.accessTokenEarlyExpiry
            && a.retryAfterSeconds == b.retryAfterSeconds && a.latency == b.latency && a.latencyShare == b.latencyShare && a.errorRates == b.errorRates
            && a.goawayEveryRequests == b.goawayEveryRequests && a.quotaPerMinute == b.quotaPerMinute
            && a.recordCapacity == b.recordCapacity && a.maxConcurrentStreams == b.maxConcurrentStreams
            && a.metadataServer == b.metadataServer
    }
}

/// Added delay of a send answer.
public enum Latency: Sendable, Equatable {
    case none
    case fixed(Duration)
    /// Uniformly random between the bounds.
    case uniform(min: Duration, max: Duration)

    func sample() -> Duration {
        switch self {
        case .none: return .zero
        case .fixed(let d): return d
        case .uniform(let lo, let hi):
            let loNs = lo.nanoseconds, hiNs = hi.nanoseconds
            guard hiNs > loNs else { return lo }
            return .nanoseconds(Int64.random(in: loNs...hiNs))
        }
    }
}

/// The kinds of FCM error the emulator can inject, by token prefix or by rate.
public enum InjectedError: String, CaseIterable, Sendable {
    case unregistered, invalid, mismatch, quota, unavailable, `internal`, thirdparty

    func error(retryAfter: Int) -> FCMError {
        switch self {
        case .unregistered: return .unregistered()
        case .invalid: return .invalidToken()
        case .mismatch: return .senderIDMismatch()
        case .quota: return .quotaExceeded(retryAfter: retryAfter)
        case .unavailable: return .unavailable(retryAfter: retryAfter)
        case .internal: return .internalError()
        case .thirdparty: return .thirdPartyAuth()
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (s, attos) = components
        return s * 1_000_000_000 + attos / 1_000_000_000
    }
}
