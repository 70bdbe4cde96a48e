/// One Firebase project's sends in flight and how fast it answers: the state behind
/// `ProjectConcurrency`, a plain value with no clock and no callbacks of its own.
///
/// A project may have `limit` sends in flight. The limit starts at `Tuning.initial`, grows by
/// one with each prompt answer (so it doubles every round trip while the project keeps up, up
/// to `Tuning.maximum`) and halves with each slow one (down to `Tuning.floor`). The project is
/// **slow** while its answers take longer than `Tuning.promptAnswer` (their smoothed time), or
/// while it has sends in flight and none answered for that long (a token endpoint or an FCM path
/// that hangs gives no answers to smooth). A send over the limit of a slow project is deferred
/// to a retry tier, acking its job, so that the project's backlog leaves the prefetch window to
/// the other projects; one over the limit of a prompt project waits for the next answer.
struct ProjectLoad: Sendable {
    /// The limits of every project.
    struct Tuning: Sendable, Equatable {
        /// Sends in flight a project starts with, and comes back to after a pause in its traffic.
        var initial = 64
        /// The fewest a slow project keeps, so that it goes on being tried.
        var floor = 16
        /// The most any project may have (the client's whole window).
        var maximum = 2_000
        /// An answer slower than this, or this long without any, makes the project slow.
        var promptAnswer: Duration = .milliseconds(500)
        /// The bounds of a deferral's wait: how long the project has been slow, within them.
        var shortestDeferral: Duration = .seconds(5)
        var longestDeferral: Duration = .seconds(300)
        /// A project with nothing in flight for this long starts again from `initial`: a project
        /// that was prompt yesterday may hang today.
        var idleReset: Duration = .seconds(10)
    }

    /// What a send asking for a place is told.
    enum Admission: Equatable, Sendable {
        /// Send now; `answered` later, once.
        case go
        /// Wait for an answer of the project (`hold`), or for `recheck` to defer it.
        case hold
        /// Do not send: defer it to a retry tier for at least this long.
        case deferred(Duration)
    }

    private(set) var inFlight = 0
    private(set) var limit: Int
    /// When the project last went from nothing in flight to one send.
    private var busySince: ContinuousClock.Instant?
    private var lastAnswer: ContinuousClock.Instant?
    /// The smoothed answer time (1/8 of each new answer, as TCP smooths round trips); nil until one.
    private(set) var smoothedAnswer: Duration?
    /// Since when the project is slow without a break, nil while it is prompt.
    private var slowSince: ContinuousClock.Instant?

    init(tuning: Tuning) { limit = min(tuning.initial, tuning.maximum) }

    /// How long the project has had sends in flight and no answer.
    func quiet(at now: ContinuousClock.Instant) -> Duration {
        guard inFlight > 0, let busySince else { return .zero }
        return now - max(busySince, lastAnswer ?? busySince)
    }

    /// True while the project answers slowly or not at all (see the type's comment).
    func isSlow(at now: ContinuousClock.Instant, _ tuning: Tuning) -> Bool {
        quiet(at: now) > tuning.promptAnswer || (smoothedAnswer ?? .zero) > tuning.promptAnswer
    }

    /// A send asks for a place: `go` (counted in flight) while under the limit; otherwise
    /// `defer` when the project is slow, `hold` when it is prompt.
    mutating func admit(at now: ContinuousClock.Instant, _ tuning: Tuning) -> Admission {
        if inFlight < limit {
            take(at: now, tuning)
            return .go
        }
        guard isSlow(at: now, tuning) else {
            slowSince = nil
            return .hold
        }
        return .deferred(deferral(at: now, tuning))
    }

    /// A send let in: counted in flight.
    mutating func take(at now: ContinuousClock.Instant, _ tuning: Tuning) {
        if inFlight == 0 {
            if let last = lastAnswer ?? busySince, now - last > tuning.idleReset {
                limit = min(limit, tuning.initial, tuning.maximum)
                smoothedAnswer = nil
            }
            busySince = now
        }
        inFlight += 1
    }

    /// A send in flight answered after `duration` (whatever the answer: a failure is an answer
    /// too, unless it never came); the limit follows.
    mutating func answered(after duration: Duration, at now: ContinuousClock.Instant, _ tuning: Tuning) {
        inFlight = max(0, inFlight - 1)
        lastAnswer = now
        smoothedAnswer = smoothedAnswer.map { $0 * 7 / 8 + duration / 8 } ?? duration
        if duration <= tuning.promptAnswer {
            limit = min(tuning.maximum, limit + 1)
        } else {
            limit = max(min(tuning.floor, tuning.maximum), limit / 2)
        }
        if !isSlow(at: now, tuning) { slowSince = nil }
    }

    /// Room for one more send now.
    var hasRoom: Bool { inFlight < limit }

    /// How long a send deferred now waits: how long the project has been slow (its quiet time,
    /// or its smoothed answer time, whichever is longer), within the tuning's bounds.
    mutating func deferral(at now: ContinuousClock.Instant, _ tuning: Tuning) -> Duration {
        if slowSince == nil { slowSince = now - quiet(at: now) }
        let slowFor = max(now - (slowSince ?? now), smoothedAnswer ?? .zero)
        return min(max(slowFor, tuning.shortestDeferral), tuning.longestDeferral)
    }

    /// When a send held now would find the project slow if no answer came: the instant its
    /// quiet time passes `promptAnswer`.
    func turnsSlow(after now: ContinuousClock.Instant, _ tuning: Tuning) -> Duration {
        max(tuning.promptAnswer - quiet(at: now), .milliseconds(1))
    }
}
