import Synchronization

/// The events database's health for `/healthz`, probed (a connection and a query) at most once
/// per `maxAge`: a health check hammered by a load balancer must not open a PostgreSQL
/// connection per request.
final class DatabaseProbe: Sendable {
    private let database: EventsDatabase
    private let maxAge: Duration
    private let last = Mutex<(at: ContinuousClock.Instant, problem: String?)?>(nil)

    init(_ database: EventsDatabase, maxAge: Duration = .seconds(1)) {
        self.database = database
        self.maxAge = maxAge
    }

    /// Nil when the database answered its latest probe, else what was wrong.
    func problem() -> String? {
        let now = ContinuousClock.now
        if let cached = last.withLock({ $0 }), now - cached.at < maxAge { return cached.problem }
        let problem = database.problem()
        last.withLock { $0 = (now, problem) }
        return problem
    }
}
