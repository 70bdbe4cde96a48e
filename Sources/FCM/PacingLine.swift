import Synchronization

/// The sends of each project that wait for their turn at the project's rate, in arrival order,
/// with no turn reserved yet (`FCMClient.pace`, asked before a send is composed or takes a
/// send-window permit).
///
/// A send whose turn is within `maxWait` reserves it at once (the token bucket's debt). One
/// further away joins its project's line instead of being deferred to a retry tier: deferring
/// acks the job, frees its prefetch slot and pulls the next job in to be deferred too, so a
/// backlog spun through the tiers (issue 32: 5.7 retry copies a send, a quarter of the quota
/// used). The line takes turns as they come within `maxWait`, so a change of rate (the fleet
/// share, a pause) applies to the sends waiting, never to turns promised long ago.
///
/// Holding is for a project that is alone: while another project's sends go through at once
/// (`othersSendingPromptly`), the held jobs would fill the prefetch window and hold the other
/// projects' jobs to their pace, so a newcomer beyond `maxWait` is deferred, as a pause is. A
/// send waits in the line at most `maxHeldWait`, then is deferred.
final class PacingLine: Sendable {
    /// Told whether the send's turn is reserved (`true`) or not (`false`: the caller defers it).
    typealias Go = @Sendable (_ placed: Bool) -> Void
    /// Runs an action after a delay (`PacedWakeups.call` in production, by hand in tests).
    typealias Schedule = @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    private struct Waiter {
        let deadline: ContinuousClock.Instant
        let go: Go
    }
    private struct Line {
        var waiters: [Waiter] = []
        var head = 0
        var drainScheduled = false
        var isEmpty: Bool { head == waiters.count }
    }

    private let limiter: ProjectRateLimiter
    private let now: @Sendable () -> ContinuousClock.Instant
    private let schedule: Schedule
    private let lines = Mutex<[String: Line]>([:])
    /// How long after a turn comes within `maxWait` the line looks again, so that one look
    /// takes several turns rather than one.
    static let gathering: Duration = .milliseconds(50)

    init(limiter: ProjectRateLimiter, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
         schedule: @escaping Schedule = { delay, action in PacedWakeups.shared.call(after: delay, action) }) {
        self.limiter = limiter
        self.now = now
        self.schedule = schedule
    }

    /// Sends waiting in `project`'s line.
    func waiting(project: String) -> Int { lines.withLock { $0[project].map { $0.waiters.count - $0.head } ?? 0 } }

    /// Takes a turn for a send of `project`, or a place in its line, and calls `go` when the send
    /// may start (at once, on this thread, when it may start now). An `urgent` send takes the
    /// next turn ahead of the line, as debt the line repays (`TokenBucket.reserveAhead`); only
    /// a pause longer than `maxWait` defers it.
    func enter(project: String, urgent: Bool = false, go: @escaping Go) {
        if urgent {
            switch limiter.reserveAhead(project: project) {
            case .granted: return go(true)
            case .grantedAfter(let delay): return schedule(delay) { go(true) }
            case .deferred: return go(false)
            }
        }
        // The common case costs one look at the line and one reservation: nobody of this project
        // waits, and its turn is within `maxWait`.
        let queued = lines.withLock { $0[project].map { !$0.isEmpty } ?? false }
        guard !queued else { return hold(project, wait: nil, go: go) }
        switch limiter.reserve(project: project) {
        case .granted: go(true)
        case .grantedAfter(let delay): schedule(delay) { go(true) }
        case .deferred(let wait): hold(project, wait: wait, go: go)
        }
    }

    /// Puts a send whose turn is beyond `maxWait` (`wait`, nil when others wait before it) in
    /// its project's line, unless the project is paused for longer or another project is sending
    /// at once: then `go(false)`.
    private func hold(_ project: String, wait: Duration?, go: @escaping Go) {
        let configuration = limiter.configuration
        guard configuration.maxHeldWait > .zero,
              limiter.pauseRemaining(project: project) <= configuration.maxWait,
              !limiter.othersSendingPromptly(besides: project)
        else { return go(false) }
        let drainAfter = lines.withLock { lines -> Duration? in
            var line = lines[project] ?? Line()
            defer { lines[project] = line }
            line.waiters.append(Waiter(deadline: now() + configuration.maxHeldWait, go: go))
            return scheduleDrain(&line, wait: wait ?? .zero)
        }
        if let drainAfter { schedule(drainAfter) { self.drain(project: project) } }
    }

    /// Marks a look at the line as planned; the delay after which to look, nil when one is
    /// planned already.
    private func scheduleDrain(_ line: inout Line, wait: Duration) -> Duration? {
        guard !line.drainScheduled else { return nil }
        line.drainScheduled = true
        return max(wait - limiter.configuration.maxWait, .zero) + Self.gathering
    }

    /// Gives the waiters at the head of `project`'s line the turns now within `maxWait`; those
    /// past their deadline, or all of them when the project is paused for longer, are deferred.
    private func drain(project: String) {
        let configuration = limiter.configuration
        var actions: [@Sendable () -> Void] = []
        var drainAfter: Duration?
        lines.withLock { lines in
            guard var line = lines[project] else { return }
            line.drainScheduled = false
            let instant = now()
            let paused = limiter.pauseRemaining(project: project) > configuration.maxWait
            while !line.isEmpty {
                let waiter = line.waiters[line.head]
                if paused || waiter.deadline <= instant {
                    actions.append { waiter.go(false) }
                } else {
                    switch limiter.reserve(project: project) {
                    case .granted: actions.append { waiter.go(true) }
                    case .grantedAfter(let delay): actions.append { self.schedule(delay) { waiter.go(true) } }
                    case .deferred(let wait):
                        drainAfter = scheduleDrain(&line, wait: wait)
                    }
                    if drainAfter != nil { break }
                }
                line.head += 1
            }
            if line.isEmpty {
                line.waiters.removeAll()
                line.head = 0
            } else if line.head > 1_024 && line.head * 2 > line.waiters.count {
                line.waiters.removeFirst(line.head)
                line.head = 0
            }
            lines[project] = line
        }
        if let drainAfter { schedule(drainAfter) { self.drain(project: project) } }
        for action in actions { action() }
    }
}
