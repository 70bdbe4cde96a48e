import PushCore

/// The events database (`EventStore`) on PostgreSQL: the same tables, keys and funnel as
/// `SQLiteEventStore`, shared by several events consumers.
///
/// Each `store` call is one transaction of a few multi-row statements (sends, then events,
/// then stream offsets). Inserts are idempotent with `ON CONFLICT`: a key another transaction
/// is inserting at the same moment waits for it and is then skipped (or, for a send, replaced
/// only when later), never a unique-violation failure. Rows go in key order, so two writers
/// lock shared keys in the same order. A stored offset moves with `GREATEST`, never back.
///
/// The schema is created at start when missing, under a transaction-level advisory lock (two
/// consumers starting at once do not race on `CREATE … IF NOT EXISTS`). A lost connection is
/// reopened at the next call; the failed call throws (`EventStore.isTransient`).
public final class PostgresEventStore: EventStoring, @unchecked Sendable {
    static let schema = """
    SET LOCAL client_min_messages = warning;
    SELECT pg_advisory_xact_lock(7306185510451);
    CREATE TABLE IF NOT EXISTS sends(
      job_id TEXT COLLATE "C" NOT NULL, mn_message_id TEXT COLLATE "C" NOT NULL, app_id TEXT NOT NULL, campaign TEXT,
      outcome TEXT NOT NULL, error_code TEXT, attempts INTEGER NOT NULL, completed_at TEXT COLLATE "C" NOT NULL,
      replays INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (job_id, mn_message_id));
    CREATE INDEX IF NOT EXISTS sends_by_message ON sends(mn_message_id);
    CREATE INDEX IF NOT EXISTS sends_by_campaign ON sends(campaign);
    CREATE INDEX IF NOT EXISTS sends_by_app ON sends(app_id);
    CREATE TABLE IF NOT EXISTS events(
      event_key TEXT COLLATE "C" NOT NULL PRIMARY KEY, mn_message_id TEXT COLLATE "C" NOT NULL, event_type TEXT NOT NULL,
      app_id TEXT, occurred_at TEXT, event_id TEXT, stored_at TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS events_by_message ON events(mn_message_id, event_type);
    CREATE TABLE IF NOT EXISTS stream_offsets(
      consumer TEXT NOT NULL, stream TEXT NOT NULL, stored_offset BIGINT NOT NULL, updated_at TEXT NOT NULL,
      PRIMARY KEY (consumer, stream));
    """

    /// Rows per statement (PostgreSQL takes at most 65 535 parameters in one).
    static let rowsPerStatement = 1000

    private let url: String
    private let createSchema: Bool
    private var connection: PostgresDatabase?
    /// The URL with its password masked.
    public let redactedURL: String

    /// Connects and creates the schema (unless `createSchema` is false: `stats` only reads).
    public init(url: String, createSchema: Bool = true) throws(PostgresError) {
        self.url = url
        self.createSchema = createSchema
        redactedURL = PostgresDatabase.redact(url)
        _ = try database()
    }

    /// The open connection, reopened (and the schema ensured) when it was lost.
    private func database() throws(PostgresError) -> PostgresDatabase {
        if let connection, connection.isConnected { return connection }
        connection = nil
        let opened = try PostgresDatabase(url: url)
        if createSchema { try opened.executeScript(Self.schema) }
        connection = opened
        return opened
    }

    /// Runs `body` on the connection; drops it when it was lost, so the next call reconnects.
    private func withDatabase<T>(_ body: (PostgresDatabase) throws -> T) throws -> T {
        do {
            return try body(try database())
        } catch let error as PostgresError where error.isConnectionLost {
            connection = nil
            throw error
        }
    }

    public func storedOffset(consumer: String, stream: String) throws -> Int64? {
        try withDatabase { db in
            let rows = try db.execute("SELECT stored_offset FROM stream_offsets WHERE consumer = $1 AND stream = $2", [consumer, stream])
            return rows.count == 0 ? nil : rows.integer(0, 0)
        }
    }

    public func funnel(_ scope: FunnelScope) throws -> Funnel {
        try withDatabase { db in try PostgresFunnelQuery.run(db, scope: scope) }
    }

    @discardableResult
    public func store(_ records: [EventStore.Record], positions: [EventStore.StreamPosition], now: Timestamp) throws -> EventStore.WriteSummary {
        // One row per key (the latest outcome of a send; the first of an event), in key order.
        var sends: [String: SendResult] = [:]
        var events: [String: PushEvent] = [:]
        for record in records {
            switch record {
            case .send(let r):
                let key = r.jobID + "\u{0}" + r.mnMessageID
                if let held = sends[key], !EventStore.isLater(r, than: held) { continue }
                sends[key] = r
            case .event(let e):
                let key = EventStore.key(of: e)
                if events[key] == nil { events[key] = e }
            }
        }
        let sendRows = sends.sorted { $0.key < $1.key }.map { _, r -> [String?] in
            [r.jobID, r.mnMessageID, r.appID, r.campaign, r.outcome.rawValue, r.error?.code, String(r.attempts),
             r.completedAt.description, String(r.replays)]
        }
        let eventRows = events.sorted { $0.key < $1.key }.map { key, e -> [String?] in
            [key, e.mnMessageID, e.eventType.rawValue, e.appID, e.occurredAt?.description, e.eventID, now.description]
        }
        return try withDatabase { db in
            try db.transaction {
                var summary = EventStore.WriteSummary()
                summary.sendsInserted = try Self.insert(sendRows, into: db, integerColumns: [7, 9], statement: { EventStore.insertSends(values: $0) })
                summary.eventsInserted = try Self.insert(eventRows, into: db, integerColumns: [], statement: Self.insertEvents)
                summary.duplicates = records.count - summary.inserted
                for position in positions.sorted(by: { ($0.consumer, $0.stream) < ($1.consumer, $1.stream) }) {
                    try db.execute("""
                        INSERT INTO stream_offsets(consumer, stream, stored_offset, updated_at) VALUES ($1, $2, $3::bigint, $4)
                        ON CONFLICT (consumer, stream) DO UPDATE SET updated_at = excluded.updated_at,
                          stored_offset = GREATEST(stream_offsets.stored_offset, excluded.stored_offset)
                        """, [position.consumer, position.stream, String(position.offset), now.description])
                }
                return summary
            }
        }
    }

    private static func insertEvents(_ values: String) -> String {
        """
        INSERT INTO events(event_key, mn_message_id, event_type, app_id, occurred_at, event_id, stored_at)
        VALUES \(values) ON CONFLICT (event_key) DO NOTHING
        """
    }

    /// Inserts `rows` (all of one width; `integerColumns` counted from 1 are cast, the others
    /// take text as it is) in statements of `rowsPerStatement`; returns the rows inserted or
    /// updated.
    private static func insert(_ rows: [[String?]], into db: PostgresDatabase, integerColumns: Set<Int>,
                               statement: (String) -> String) throws -> Int {
        guard let width = rows.first?.count else { return 0 }
        var changed = 0
        for start in stride(from: 0, to: rows.count, by: rowsPerStatement) {
            let chunk = rows[start..<min(start + rowsPerStatement, rows.count)]
            let values = (0..<chunk.count).map { row in
                "(" + (1...width).map { column in
                    let n = row * width + column
                    return integerColumns.contains(column) ? "$\(n)::integer" : "$\(n)"
                }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
            changed += try db.execute(statement(values), Array(chunk.joined())).changes
        }
        return changed
    }
}
