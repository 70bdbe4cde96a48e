/// A token bucket with a pause, in pure form: the caller passes the current instant.
///
/// `reserve` takes one token even when the bucket is empty (the balance goes negative) and
/// answers how long the caller must wait, so that waiters are served in arrival order at the
/// configured rate without re-polling.
struct TokenBucket: Sendable {
    let capacity: Double
    let tokensPerSecond: Double
    private(set) var tokens: Double
    private(set) var updatedAt: ContinuousClock.Instant
    private(set) var pausedUntil: ContinuousClock.Instant?
    /// When `reserve` last answered `.granted` (a send that waited for nothing).
    private(set) var lastGrantedAt: ContinuousClock.Instant?

    init(perMinute: Int, burst: Int, now: ContinuousClock.Instant) {
        tokensPerSecond = Double(max(perMinute, 1)) / 60
        capacity = Double(max(burst, 1))
        tokens = capacity
        updatedAt = now
    }

    /// The same bucket at another rate: its pause stays, and its tokens are kept up to the new
    /// capacity (a rate change never hands out a fresh burst).
    func rescaled(perMinute: Int, burst: Int, now: ContinuousClock.Instant) -> TokenBucket {
        var copy = self
        copy.refill(now: now)
        var bucket = TokenBucket(perMinute: perMinute, burst: burst, now: now)
        bucket.tokens = min(copy.tokens, bucket.capacity)
        bucket.pausedUntil = copy.pausedUntil
        return bucket
    }

    /// The outcome of one reservation.
    enum Reservation: Sendable, Equatable {
        /// Go now.
        case granted
        /// A token is reserved; go after this delay.
        case grantedAfter(Duration)
        /// The wait would exceed the caller's limit: nothing was reserved; try again after this delay.
        case deferred(Duration)
    }

    /// Reserves one token, unless the wait (pause and pacing) would exceed `maxWait`.
    mutating func reserve(now: ContinuousClock.Instant, maxWait: Duration) -> Reservation {
        refill(now: now)
        let pause = pausedUntil.map { $0 > now ? now.duration(to: $0) : .zero } ?? .zero
        if pause > maxWait { return .deferred(pause) }
        // No token accrues during a pause: what waited for it leaves at the rate after it, not
        // all at once when it ends.
        let debtWait: Duration = tokens >= 1 ? .zero : .seconds((1 - tokens) / tokensPerSecond)
        let wait = pause + debtWait
        if wait > maxWait { return .deferred(wait) }
        tokens -= 1
        if wait == .zero { lastGrantedAt = now }
        return wait == .zero ? .granted : .grantedAfter(wait)
    }

    /// Reserves one token for an urgent send: it goes after the pause alone (deferred when that
    /// exceeds `maxWait`), taking the token as debt that the sends after it repay, so an urgent
    /// send never waits behind a project's paced backlog and the rate over time is kept.
    mutating func reserveAhead(now: ContinuousClock.Instant, maxWait: Duration) -> Reservation {
        refill(now: now)
        let pause = pausedUntil.map { $0 > now ? now.duration(to: $0) : .zero } ?? .zero
        if pause > maxWait { return .deferred(pause) }
        tokens -= 1
        return pause == .zero ? .granted : .grantedAfter(pause)
    }

    /// Remaining pause at `now`, zero when not paused.
    func pauseRemaining(now: ContinuousClock.Instant) -> Duration {
        guard let pausedUntil, pausedUntil > now else { return .zero }
        return now.duration(to: pausedUntil)
    }

    /// Pauses the whole bucket until `until` (never shortens an existing pause).
    mutating func pause(until: ContinuousClock.Instant) {
        if let pausedUntil, pausedUntil >= until { return }
        pausedUntil = until
    }

    private mutating func refill(now: ContinuousClock.Instant) {
        guard now > updatedAt else { return }
        let from = max(updatedAt, pausedUntil ?? updatedAt)
        if now > from {
            let elapsed = from.duration(to: now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(capacity, tokens + seconds * tokensPerSecond)
        }
        updatedAt = now
    }
}
