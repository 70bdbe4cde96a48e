/// When to try a transient failure again, and when to give up: exponential backoff with jitter,
/// never sooner than the server's `Retry-After`, within a number of attempts and a total age.
///
/// A value, like swift-jobs' retry strategies: `.exponentialJitter(maxAttempts: 8)`.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all (the first send included); the last failure dead-letters.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// A job failing for longer than this since its first failure is dead-lettered.
    public var maxAge: Duration
    /// Spread of the jitter, as a fraction of the delay (0.2 = ±20 %).
    public var jitter: Double
    /// FCM asks for at least a minute after a quota 429.
    public var minimumQuotaDelay: Duration

    public init(maxAttempts: Int = 8, baseDelay: Duration = .seconds(5), maxDelay: Duration = .seconds(3600),
                maxAge: Duration = .seconds(86_400), jitter: Double = 0.2, minimumQuotaDelay: Duration = .seconds(60)) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxAge = maxAge
        self.jitter = jitter
        self.minimumQuotaDelay = minimumQuotaDelay
    }

    public static func exponentialJitter(maxAttempts: Int, baseDelay: Duration = .seconds(5), maxDelay: Duration = .seconds(3600)) -> RetryPolicy {
        RetryPolicy(maxAttempts: maxAttempts, baseDelay: baseDelay, maxDelay: maxDelay)
    }

    /// The delay before attempt `attempt + 1`, after `attempt` attempts failed transiently.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration?, isQuota: Bool,
                      using random: inout some RandomNumberGenerator) -> Duration {
        let exponent = Double(max(0, attempt - 1))
        let raw = min(baseDelay.seconds * Double.pow2(exponent), maxDelay.seconds)
        let spread = jitter > 0 ? Double.random(in: (1 - jitter)...(1 + jitter), using: &random) : 1
        var seconds = min(raw * spread, maxDelay.seconds)
        if let retryAfter { seconds = max(seconds, retryAfter.seconds) }
        if isQuota { seconds = max(seconds, minimumQuotaDelay.seconds) }
        // A Retry-After from the network is not trusted beyond the job's whole retry budget.
        seconds = min(seconds, max(maxAge.seconds, maxDelay.seconds))
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// True when a job that has made `attempts` attempts, first failing at `firstFailedAt`, must stop.
    public func isExhausted(attempts: Int, firstFailedAt: Timestamp, now: Timestamp) -> Bool {
        attempts >= maxAttempts || now.secondsSince1970 - firstFailedAt.secondsSince1970 >= maxAge.seconds
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    public var seconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}

extension Double {
    static func pow2(_ e: Double) -> Double {
        var r = 1.0
        var i = 0.0
        while i < e && r < 1e12 { r *= 2; i += 1 }
        return r
    }
}
