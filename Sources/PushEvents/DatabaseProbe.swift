import EventStorage
import Synchronization

/// The events database's health for `/healthz`, probed (a connection and a query) at most once
/// per `maxAge`: a health check hammered by a load balancer must not open a PostgreSQL
/// connection per request. One probe runs at a time: while it waits on a slow server (at most
/// its connect timeout), other callers get the previous answer instead of opening connections
/// of their own.
final class DatabaseProbe: Sendable {
    private struct State {
        var last: (at: ContinuousClock.Instant, problem: String?)?
        var probing = false
    }

    private let probe: @Sendable () -> String?
    private let maxAge: Duration
    private let state = Mutex(State())

    convenience init(_ database: EventsDatabase, maxAge: Duration = .seconds(1)) {
        self.init(maxAge: maxAge) { database.problem() }
    }

    /// `probe` answers nil when healthy, else what is wrong.
    init(maxAge: Duration, probe: @escaping @Sendable () -> String?) {
        self.probe = probe
        self.maxAge = maxAge
    }

    /// Nil when the database answered its latest probe, else what was wrong.
    func problem() -> String? {
        let now = ContinuousClock.now
        enum Decision { case answer(String?), probe }
        let decision = state.withLock { state -> Decision in
            if let last = state.last, now - last.at < maxAge || state.probing { return .answer(last.problem) }
            state.probing = true
            return .probe
        }
        if case .answer(let problem) = decision { return problem }
        let problem = probe()
        state.withLock { $0 = State(last: (ContinuousClock.now, problem), probing: false) }
        return problem
    }
}
