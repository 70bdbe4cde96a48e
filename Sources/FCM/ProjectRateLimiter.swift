import PushCore
import Synchronization

/// Per-Firebase-project send rate: a token bucket at the project's quota (FCM's default is
/// 600 000 messages / minute / project) plus a project-wide pause when FCM answers 429, so a
/// quota error slows the whole project rather than one message.
///
/// With several worker processes on one job queue, `setShare` scales every project's rate to
/// this process's share of the fleet (`QuotaShare`), and `onQuotaPause` / `applyFleetPause`
/// carry a 429's pause to the other processes (`FleetQuota` in the worker).
public final class ProjectRateLimiter: Sendable {
    /// Tunables; the defaults follow FCM's documented quota and advice.
    public struct Configuration: Sendable {
        /// Messages per minute per project.
        public var perMinute: Int = 600_000
        /// Largest burst; defaults to one second's worth of quota.
        public var burst: Int? = nil
        /// The shortest pause after a 429, whatever Retry-After says (FCM asks for ≥ 1 minute).
        public var minimumQuotaPause: Duration = .seconds(60)
        /// How long a project pauses after a failure every send of it would hit: our access token
        /// refused after a refresh, the token endpoint refusing the service account, or an answer
        /// that is not FCM's (wrong URL, proxy error page).
        public var configurationPause: Duration = .seconds(60)
        /// How long a project pauses after its token endpoint failed in a way that may clear by
        /// itself (5xx, 429, garbage, unreachable), unless its `Retry-After` asks for longer.
        public var tokenOutagePause: Duration = .seconds(10)
        /// Longest a caller waits in `acquire` (for a pause, or for its turn at the rate); beyond
        /// it `acquire` answers `.deferred`.
        public var maxWait: Duration = .seconds(5)
        /// Longest a send over its project's rate waits in its project's line (`PacingLine`)
        /// before it is deferred to a retry tier.
        public var maxHeldWait: Duration = .seconds(300)
        /// A project's sends join its line only while no other project got a send through at
        /// once within this span: otherwise they would fill the prefetch window and hold the
        /// other projects' jobs to their pace.
        public var contentionWindow: Duration = .seconds(2)
        public init() {}
    }

    /// The answer of `acquire`.
    public enum Grant: Sendable, Equatable {
        /// Send now.
        case granted
        /// The project is paused or over quota for longer than `maxWait`: retry after the delay.
        case deferred(Duration)
    }

    /// Why a project is paused (the `reason` label of the paused-projects gauge).
    public enum PauseReason: String, Sendable, CaseIterable {
        /// FCM answered 429.
        case quota
        /// Our credentials were refused (access token after a refresh, or the token endpoint).
        case auth
        /// An answer that is not FCM's (wrong URL, proxy page).
        case config
        /// FCM's TLS certificate failed verification (it does not name the host, or an
        /// untrusted chain): a `--fcm-url` or `--ca-file` to fix.
        case tls
        /// The token endpoint failed in a way that may clear by itself (5xx, 429, an answer that
        /// is no token, unreachable).
        case token
    }

    public let configuration: Configuration
    /// The latest pause of each project and why (for `pausedProjects`).
    private let pauses = Mutex<[String: (until: ContinuousClock.Instant, reason: PauseReason)]>([:])
    private let now: @Sendable () -> ContinuousClock.Instant
    private let buckets = Mutex<[String: TokenBucket]>([:])
    /// Per-project sends per minute replacing `configuration.perMinute` (from the App ID file).
    private let limits = Mutex<[String: Int]>([:])
    /// This process's fraction of every project's limit (1: alone).
    private let share = Mutex<Double>(1)
    /// Told about every pause a 429 caused here: the project and how long it pauses.
    private let quotaPauseHandler = Mutex<(@Sendable (String, Duration) -> Void)?>(nil)

    /// `now` is injectable for tests; it defaults to the continuous clock.
    public init(configuration: Configuration = Configuration(),
                now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.configuration = configuration
        self.now = now
    }

    /// Sets the per-minute limit of each project named (the others use `configuration.perMinute`).
    /// A project whose limit changed starts a fresh bucket, keeping any pause it is under.
    public func setLimits(_ perMinute: [String: Int]) {
        let old = limits.withLock { limits in
            defer { limits = perMinute }
            return limits
        }
        let instant = now()
        buckets.withLock { buckets in
            for project in Set(old.keys).union(perMinute.keys) where old[project] != perMinute[project] {
                guard let previous = buckets[project] else { continue }
                var bucket = newBucket(project, now: instant)
                if previous.pauseRemaining(now: instant) > .zero { bucket.pause(until: instant + previous.pauseRemaining(now: instant)) }
                buckets[project] = bucket
            }
        }
    }

    /// The sends per minute allowed to `project` (for the whole fleet).
    public func limit(project: String) -> Int { limits.withLock { $0[project] } ?? configuration.perMinute }

    /// The sends per minute this process allows itself for `project`: its share of `limit`.
    public func effectiveLimit(project: String) -> Int {
        QuotaShare.limit(limit(project: project), share: share.withLock { $0 })
    }

    /// This process's fraction of every project's limit, in (0, 1].
    public var currentShare: Double { share.withLock { $0 } }

    /// Sets this process's fraction of every project's limit (`QuotaShare`). Buckets take the
    /// new rate at once, keeping their pause and no more tokens than the new burst.
    public func setShare(_ fraction: Double) {
        let fraction = min(1, max(fraction, 1e-6))
        let changed = share.withLock { current in
            defer { current = fraction }
            return current != fraction
        }
        guard changed else { return }
        let instant = now()
        buckets.withLock { buckets in
            for (project, bucket) in buckets {
                let (perMinute, burst) = rate(project)
                buckets[project] = bucket.rescaled(perMinute: perMinute, burst: burst, now: instant)
            }
        }
    }

    /// Calls `handler` (project, pause) each time a 429 pauses a project here, after the pause
    /// is in force; pauses applied with `applyFleetPause` are not reported.
    public func onQuotaPause(_ handler: (@Sendable (String, Duration) -> Void)?) {
        quotaPauseHandler.withLock { $0 = handler }
    }

    /// Pauses `project` for `duration` because another process of the fleet got a 429 (never
    /// shortens a pause; applying the same pause twice changes nothing).
    public func applyFleetPause(project: String, for duration: Duration) {
        guard duration > .zero else { return }
        pause(project: project, for: duration, reason: .quota)
    }

    /// A project's rate here and its burst: one second's worth (at most `burst`).
    private func rate(_ project: String) -> (perMinute: Int, burst: Int) {
        let configured = limit(project: project)
        let perMinute = QuotaShare.limit(configured, share: currentShare)
        let second = max(perMinute / 60, 1)
        guard configured == configuration.perMinute, let burst = configuration.burst else {
            return (perMinute, min(configuration.burst ?? second, second))
        }
        return (perMinute, QuotaShare.limit(burst, share: currentShare))
    }

    /// A full bucket at the project's rate.
    private func newBucket(_ project: String, now instant: ContinuousClock.Instant) -> TokenBucket {
        let (perMinute, burst) = rate(project)
        return TokenBucket(perMinute: perMinute, burst: burst, now: instant)
    }

    /// Pure step: reserves one send for `project` at the current instant.
    func reserve(project: String) -> TokenBucket.Reservation {
        withBucket(project) { bucket, instant in bucket.reserve(now: instant, maxWait: configuration.maxWait) }
    }

    /// Pure step: reserves one urgent send for `project` ahead of its paced sends
    /// (`TokenBucket.reserveAhead`).
    func reserveAhead(project: String) -> TokenBucket.Reservation {
        withBucket(project) { bucket, instant in bucket.reserveAhead(now: instant, maxWait: configuration.maxWait) }
    }

    /// Runs `step` on `project`'s bucket (a full one at first) at the current instant.
    private func withBucket<T>(_ project: String, _ step: (inout TokenBucket, ContinuousClock.Instant) -> T) -> T {
        let instant = now()
        return buckets.withLock { buckets in
            var bucket = buckets[project] ?? newBucket(project, now: instant)
            defer { buckets[project] = bucket }
            return step(&bucket, instant)
        }
    }

    /// What `acquire` decides at once: a grant, or a pacing delay to wait out first (`waitOut`).
    public enum Decision: Sendable, Equatable {
        case now(Grant)
        case paced(Duration)
    }

    /// Reserves one send for `project` without waiting: granted or deferred now, or granted
    /// once `waitOut` has waited out the returned pacing delay.
    public func decide(project: String) -> Decision {
        switch reserve(project: project) {
        case .granted: .now(.granted)
        case .deferred(let delay): .now(.deferred(delay))
        case .grantedAfter(let delay): .paced(delay)
        }
    }

    /// True when a project other than `project` had a send granted at once (no wait) within
    /// `contentionWindow`: sends of other projects are flowing and must not wait behind it.
    public func othersSendingPromptly(besides project: String) -> Bool {
        let since = now() - configuration.contentionWindow
        return buckets.withLock { buckets in
            buckets.contains { $0.key != project && ($0.value.lastGrantedAt.map { $0 >= since } ?? false) }
        }
    }

    /// Waits out a pacing delay from `decide`; deferred when a 429 paused the project meanwhile.
    public func waitOut(_ delay: Duration, project: String) async -> Grant {
        await PacedWakeups.shared.sleep(for: delay)  // one timer for every paced send, not one each
        return turnKept(project: project)
    }

    /// For a send whose turn was reserved and waited for: granted, unless a pause (a 429)
    /// began meanwhile.
    public func turnKept(project: String) -> Grant {
        let pause = pauseRemaining(project: project)
        return pause > .zero ? .deferred(pause) : .granted
    }

    /// Waits (without blocking a thread) until `project` may send one message.
    public func acquire(project: String) async -> Grant {
        switch decide(project: project) {
        case .now(let grant): grant
        case .paced(let delay): await waitOut(delay, project: project)
        }
    }

    /// Records a 429 for `project`: pause it for max(Retry-After, minimumQuotaPause).
    public func recordQuotaExceeded(project: String, retryAfter: Duration?) {
        let duration = max(retryAfter ?? .zero, configuration.minimumQuotaPause)
        pause(project: project, for: duration, reason: .quota)
        quotaPauseHandler.withLock { $0 }?(project, duration)
    }

    /// Records a fault of the setup for `project` (`tls`, `auth`, `token`, `config`): pause it for
    /// `duration`, or for the pause its reason implies when nil (`tokenOutagePause` for `token`,
    /// `configurationPause` otherwise). True when this started a pause (the project was not
    /// paused): the one moment worth a log line.
    @discardableResult
    public func recordSetupFault(project: String, reason: PauseReason, for duration: Duration? = nil) -> Bool {
        let length = duration ?? (reason == .token ? configuration.tokenOutagePause : configuration.configurationPause)
        return pause(project: project, for: length, reason: reason)
    }

    @discardableResult
    private func pause(project: String, for pause: Duration, reason: PauseReason) -> Bool {
        let instant = now()
        let started = pauses.withLock { pauses -> Bool in
            let current = pauses[project]
            let wasPaused = current.map { $0.until > instant } ?? false
            if let current, current.until > instant + pause { return false }
            pauses[project] = (instant + pause, reason)
            return !wasPaused
        }
        buckets.withLock { buckets in
            var bucket = buckets[project] ?? newBucket(project, now: instant)
            bucket.pause(until: instant + pause)
            buckets[project] = bucket
        }
        return started
    }

    /// Projects paused right now, by the reason of their latest pause.
    public func pausedProjects() -> [PauseReason: Int] {
        let instant = now()
        return pauses.withLock { pauses in
            pauses = pauses.filter { $0.value.until > instant }
            return pauses.values.reduce(into: [:]) { $0[$1.reason, default: 0] += 1 }
        }
    }

    /// How long `project` stays paused, zero when it is not.
    public func pauseRemaining(project: String) -> Duration {
        let instant = now()
        return buckets.withLock { $0[project]?.pauseRemaining(now: instant) ?? .zero }
    }
}
