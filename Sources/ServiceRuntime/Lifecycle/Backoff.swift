/// An exponential backoff as a value: `initial`, doubling after each failure, never above `max`.
public struct Backoff: Sendable, Equatable {
    public var initial: Duration
    public var max: Duration

    public init(initial: Duration, max: Duration) {
        self.initial = initial
        self.max = max
    }

    /// The wait after `failures` consecutive failures (1 → `initial`).
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = initial
        for _ in 1..<Swift.max(failures, 1) {
            if delay >= max { break }
            delay = delay * 2
        }
        return Swift.min(delay, max)
    }
}
