/// What every worker knows of the quota pauses of the fleet, and the rule that keeps their
/// broadcast from turning into a storm (pure: deadlines are epoch milliseconds given by the
/// caller).
///
/// - A pause this process caused (a 429 it got) is broadcast only when it ends at least
///   `minimumExtension` later than the latest pause known for the project, whoever announced
///   it. Many 429s of one burst, from one process or several, give one message per process at
///   most, and usually one for the whole fleet.
/// - A pause received from the control exchange is recorded and applied, never broadcast again.
public struct FleetPauseLedger: Sendable, Equatable {
    /// A local pause must end this much later than the known one to be announced again.
    public let minimumExtensionMillis: Int64
    /// Latest known end of a pause, by project.
    public private(set) var pausedUntil: [String: Int64] = [:]

    public init(minimumExtensionMillis: Int64 = 1_000) {
        self.minimumExtensionMillis = minimumExtensionMillis
    }

    /// A 429 paused `project` here until `until`: true when that pause is to be broadcast
    /// (it is then recorded as known).
    public mutating func shouldBroadcast(project: String, until: Int64) -> Bool {
        if let known = pausedUntil[project], until < known + minimumExtensionMillis { return false }
        pausedUntil[project] = until
        return true
    }

    /// A pause arrived from the control exchange (possibly our own): records it when it ends
    /// later than what is known. The caller applies it to its rate limiter either way (a pause
    /// never shortens there).
    public mutating func received(project: String, until: Int64) {
        if let known = pausedUntil[project], known >= until { return }
        pausedUntil[project] = until
    }

    /// Forgets pauses that ended before `now` (keeps the table small).
    public mutating func prune(now: Int64) {
        pausedUntil = pausedUntil.filter { $0.value > now }
    }
}
