import Synchronization

/// Bounds each Firebase project's sends in flight by how fast it answers (`ProjectLoad`), so that
/// a project whose token endpoint hangs, or whose answers take seconds, holds a bounded share of
/// the send window while the other projects' jobs go through at their usual latency.
///
/// `FCMClient.start` asks `enter` before each send leaves (after its turn at the project's rate,
/// so pacing is not counted as slowness) and calls `leave` with the time the send took once it
/// is answered. A send over the limit of a slow project is told to defer (its job goes to a
/// retry tier, acked, without using an attempt); over the limit of a prompt one it waits, as a
/// callback, for the next answer of its project, or until the project turns slow, then defers.
public final class ProjectConcurrency: Sendable {
    /// What `enter` tells a send: go now, or defer for at least this long.
    public enum Decision: Equatable, Sendable {
        case go
        case deferred(Duration)
    }
    /// Runs an action after a delay (`PacedWakeups.call` in production, by hand in tests).
    typealias Schedule = @Sendable (Duration, @escaping @Sendable () -> Void) -> Void
    private typealias Waiter = @Sendable (Decision) -> Void

    private struct Project {
        var load: ProjectLoad
        var held: [Waiter] = []
        var head = 0
        var recheckScheduled = false
        var waiting: Int { held.count - head }
    }

    let tuning: ProjectLoad.Tuning
    private let now: @Sendable () -> ContinuousClock.Instant
    private let schedule: Schedule
    private let projects = Mutex<[String: Project]>([:])
    /// Told when a project turns slow and when it is prompt again (log lines, metrics).
    private let watcher = Mutex<(@Sendable (String, Bool, Int) -> Void)?>(nil)
    private let slowProjects = Mutex<Set<String>>([])

    init(tuning: ProjectLoad.Tuning, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
         schedule: @escaping Schedule = { delay, action in PacedWakeups.shared.call(after: delay, action) }) {
        self.tuning = tuning
        self.now = now
        self.schedule = schedule
    }

    /// Calls `watch(project, slow, limit)` when a project turns slow (its deferrals begin) and
    /// when it answers promptly again.
    public func onChange(_ watch: @escaping @Sendable (_ project: String, _ slow: Bool, _ limit: Int) -> Void) {
        watcher.withLock { $0 = watch }
    }

    /// Asks a place for a send of `project`; `decided` is called once, at once on this thread
    /// when the project has room or is slow, later (from an answer or a timer) when the send
    /// waits. After `.go`, `leave` must follow once.
    public func enter(project: String, decided: @escaping @Sendable (Decision) -> Void) {
        let instant = now()
        let (admission, recheck) = projects.withLock { projects -> (ProjectLoad.Admission, Duration?) in
            var entry = projects[project] ?? Project(load: ProjectLoad(tuning: tuning))
            defer { projects[project] = entry }
            // A waiter ahead goes first: a newcomer does not overtake the line.
            let admission = entry.waiting > 0 ? holdOrDefer(&entry, at: instant) : entry.load.admit(at: instant, tuning)
            guard admission == .hold else { return (admission, nil) }
            entry.held.append(decided)
            return (admission, scheduleRecheck(&entry, at: instant))
        }
        if let recheck { schedule(recheck) { self.recheck(project: project) } }
        switch admission {
        case .go: decided(.go)
        case .deferred(let wait):
            noteSlow(project)
            decided(.deferred(wait))
        case .hold: break
        }
    }

    /// A send let in by `enter` was answered after `duration`: the project's limit follows, and
    /// the sends waiting that now fit are let in.
    public func leave(project: String, after duration: Duration) {
        let instant = now()
        let (ready, prompt, limit) = projects.withLock { projects -> ([Waiter], Bool, Int) in
            guard var entry = projects[project] else { return ([], true, 0) }
            defer { projects[project] = entry }
            entry.load.answered(after: duration, at: instant, tuning)
            var ready: [Waiter] = []
            while entry.waiting > 0, entry.load.hasRoom {
                ready.append(entry.held[entry.head])
                entry.head += 1
                entry.load.take(at: instant, tuning)
            }
            compact(&entry)
            return (ready, !entry.load.isSlow(at: instant, tuning), entry.load.limit)
        }
        if prompt { notePrompt(project, limit: limit) }
        for waiter in ready { waiter(.go) }
    }

    /// Sends of `project` in flight and its limit now (metrics, tests).
    public func state(project: String) -> (inFlight: Int, limit: Int, waiting: Int) {
        projects.withLock { p in p[project].map { ($0.load.inFlight, $0.load.limit, $0.waiting) } ?? (0, tuning.initial, 0) }
    }

    /// Projects slow right now (their sends over the limit are deferred).
    public var slowProjectCount: Int { slowProjects.withLock { $0.count } }

    /// A newcomer behind waiters: it waits too while the project is prompt, defers when slow.
    private func holdOrDefer(_ entry: inout Project, at instant: ContinuousClock.Instant) -> ProjectLoad.Admission {
        entry.load.isSlow(at: instant, tuning) ? .deferred(entry.load.deferral(at: instant, tuning)) : .hold
    }

    /// Plans a look at the held sends for when the project would turn slow; nil when one is planned.
    private func scheduleRecheck(_ entry: inout Project, at instant: ContinuousClock.Instant) -> Duration? {
        guard !entry.recheckScheduled else { return nil }
        entry.recheckScheduled = true
        return entry.load.turnsSlow(after: instant, tuning)
    }

    /// The held sends of a project that turned slow meanwhile are deferred; otherwise looked at
    /// again when it would.
    private func recheck(project: String) {
        let instant = now()
        let (deferred, wait, again) = projects.withLock { projects -> ([Waiter], Duration, Duration?) in
            guard var entry = projects[project] else { return ([], .zero, nil) }
            defer { projects[project] = entry }
            entry.recheckScheduled = false
            guard entry.waiting > 0 else { return ([], .zero, nil) }
            guard entry.load.isSlow(at: instant, tuning) else { return ([], .zero, scheduleRecheck(&entry, at: instant)) }
            let deferred = Array(entry.held[entry.head...])
            entry.head = entry.held.count
            compact(&entry)
            return (deferred, entry.load.deferral(at: instant, tuning), nil)
        }
        if let again { schedule(again) { self.recheck(project: project) } }
        guard !deferred.isEmpty else { return }
        noteSlow(project)
        for waiter in deferred { waiter(.deferred(wait)) }
    }

    private func compact(_ entry: inout Project) {
        if entry.waiting == 0 {
            entry.held.removeAll()
            entry.head = 0
        } else if entry.head > 1_024, entry.head * 2 > entry.held.count {
            entry.held.removeFirst(entry.head)
            entry.head = 0
        }
    }

    private func noteSlow(_ project: String) {
        guard slowProjects.withLock({ $0.insert(project).inserted }) else { return }
        let limit = state(project: project).limit
        watcher.withLock { $0 }?(project, true, limit)
    }

    private func notePrompt(_ project: String, limit: Int) {
        guard slowProjects.withLock({ $0.remove(project) != nil }) else { return }
        watcher.withLock { $0 }?(project, false, limit)
    }
}
