/// Reads a `Funnel` from a PostgreSQL events database: the query of `FunnelQuery`, in
/// PostgreSQL's dialect (the same numbers for the same rows).
enum PostgresFunnelQuery {
    static func run(_ database: PostgresDatabase, scope: FunnelScope) throws(PostgresError) -> Funnel {
        let filter: String
        var parameters: [String?] = []
        switch scope {
        case .all: filter = "TRUE"
        case .job(let j): (filter, parameters) = ("s.job_id = $1", [j])
        case .campaign(let c): (filter, parameters) = ("s.campaign = $1", [c])
        case .app(let a): (filter, parameters) = ("s.app_id = $1", [a])
        }
        var funnel = Funnel()
        let sends = try database.execute("""
            SELECT count(*), count(*) FILTER (WHERE outcome = 'sent'), count(*) FILTER (WHERE outcome = 'validated'),
                   count(*) FILTER (WHERE outcome = 'invalid_token'), count(*) FILTER (WHERE outcome = 'rejected'),
                   count(*) FILTER (WHERE outcome = 'expired'), count(*) FILTER (WHERE outcome = 'dead_lettered'),
                   count(*) FILTER (WHERE outcome = 'cancelled')
            FROM sends s WHERE \(filter)
            """, parameters)
        func int(_ rows: PostgresRows, _ row: Int, _ column: Int) -> Int { Int(rows.integer(row, column) ?? 0) }
        if sends.count == 1 {
            funnel.recipients = int(sends, 0, 0)
            funnel.sent = int(sends, 0, 1)
            funnel.validated = int(sends, 0, 2)
            funnel.invalidTokens = int(sends, 0, 3)
            funnel.rejected = int(sends, 0, 4)
            funnel.expired = int(sends, 0, 5)
            funnel.deadLettered = int(sends, 0, 6)
            funnel.cancelled = int(sends, 0, 7)
        }
        let events = try database.execute("""
            SELECT e.event_type, count(DISTINCT e.mn_message_id), count(*) FROM events e
            WHERE EXISTS (SELECT 1 FROM sends s WHERE \(EventStore.sameSend) AND \(filter)) GROUP BY e.event_type
            """, parameters)
        for row in 0..<events.count {
            funnel.add(eventType: events.text(row, 0), distinct: int(events, row, 1), rows: int(events, row, 2))
        }
        if scope == .all {
            let unlinked = try database.execute(
                "SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM sends s WHERE \(EventStore.sameSend))")
            funnel.unlinkedEvents = int(unlinked, 0, 0)
        }
        return funnel
    }
}
