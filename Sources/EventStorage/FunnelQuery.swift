/// Reads a `Funnel` from a SQLite events database (`PostgresFunnelQuery` is the same query on
/// PostgreSQL).
public enum FunnelQuery {
    /// On a read-only connection of its own: safe alongside the writer thanks to WAL.
    public static func run(path: String, scope: FunnelScope) throws(SQLiteError) -> Funnel {
        try run(SQLiteDatabase(path: path, readOnly: true), scope: scope)
    }

    static func run(_ database: SQLiteDatabase, scope: FunnelScope) throws(SQLiteError) -> Funnel {
        let filter: String
        let value: String?
        switch scope {
        case .all: (filter, value) = ("1 = 1", nil)
        case .job(let j): (filter, value) = ("s.job_id = ?1", j)
        case .campaign(let c): (filter, value) = ("s.campaign = ?1", c)
        case .app(let a): (filter, value) = ("s.app_id = ?1", a)
        }
        var funnel = Funnel()
        let sends = try database.prepare("""
            SELECT count(*), total(outcome = 'sent'), total(outcome = 'validated'), total(outcome = 'invalid_token'),
                   total(outcome = 'rejected'), total(outcome = 'expired'), total(outcome = 'dead_lettered'),
                   total(outcome = 'cancelled') FROM sends s WHERE \(filter)
            """)
        if let value { try sends.bind(1, value) }
        if try sends.step() {
            funnel.recipients = Int(sends.int(0))
            funnel.sent = Int(sends.int(1))
            funnel.validated = Int(sends.int(2))
            funnel.invalidTokens = Int(sends.int(3))
            funnel.rejected = Int(sends.int(4))
            funnel.expired = Int(sends.int(5))
            funnel.deadLettered = Int(sends.int(6))
            funnel.cancelled = Int(sends.int(7))
        }
        // An event counts for a send of its own App ID only (an event without one, possible when
        // event keys are off, for any): another app's key cannot write this app's funnel.
        let events = try database.prepare("""
            SELECT e.event_type, count(DISTINCT e.mn_message_id), count(*) FROM events e
            WHERE EXISTS (SELECT 1 FROM sends s WHERE \(EventStore.sameSend) AND \(filter)) GROUP BY e.event_type
            """)
        if let value { try events.bind(1, value) }
        while try events.step() {
            funnel.add(eventType: events.text(0), distinct: Int(events.int(1)), rows: Int(events.int(2)))
        }
        if scope == .all {
            let unlinked = try database.prepare("SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM sends s WHERE \(EventStore.sameSend))")
            if try unlinked.step() { funnel.unlinkedEvents = Int(unlinked.int(0)) }
        }
        return funnel
    }
}
