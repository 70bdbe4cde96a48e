import FoundationEssentials
import PushCore

/// The events database (`EventStore`) in a SQLite file: the embedded default, one writer.
/// Every `store` call is one transaction (`BEGIN IMMEDIATE` … `COMMIT`): all or nothing.
public final class SQLiteEventStore: EventStoring, @unchecked Sendable {
    static let schema = """
    CREATE TABLE IF NOT EXISTS sends(
      job_id TEXT NOT NULL, mn_message_id TEXT NOT NULL, app_id TEXT NOT NULL, campaign TEXT,
      outcome TEXT NOT NULL, error_code TEXT, attempts INTEGER NOT NULL, completed_at TEXT NOT NULL,
      replays INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (job_id, mn_message_id)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS sends_by_message ON sends(mn_message_id);
    CREATE INDEX IF NOT EXISTS sends_by_campaign ON sends(campaign);
    CREATE INDEX IF NOT EXISTS sends_by_app ON sends(app_id);
    CREATE TABLE IF NOT EXISTS events(
      event_key TEXT NOT NULL PRIMARY KEY, mn_message_id TEXT NOT NULL, event_type TEXT NOT NULL,
      app_id TEXT, occurred_at TEXT, event_id TEXT, stored_at TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS events_by_message ON events(mn_message_id, event_type);
    CREATE TABLE IF NOT EXISTS stream_offsets(
      consumer TEXT NOT NULL, stream TEXT NOT NULL, stored_offset INTEGER NOT NULL, updated_at TEXT NOT NULL,
      PRIMARY KEY (consumer, stream)) WITHOUT ROWID;
    """

    private let database: SQLiteDatabase
    private let insertSend: SQLiteStatement
    private let insertEvent: SQLiteStatement
    private let upsertOffset: SQLiteStatement
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement

    /// Opens or creates the database at `path` and its schema.
    public init(path: String) throws(SQLiteError) {
        database = try SQLiteDatabase(path: path)
        try database.execute(Self.schema)
        try Self.addReplaysColumn(database)
        // `completed_at` is RFC 3339 UTC with whole seconds: text order is time order.
        insertSend = try database.prepare(EventStore.insertSends(values: "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"))
        insertEvent = try database.prepare("""
            INSERT OR IGNORE INTO events(event_key, mn_message_id, event_type, app_id, occurred_at, event_id, stored_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """)
        upsertOffset = try database.prepare("""
            INSERT INTO stream_offsets(consumer, stream, stored_offset, updated_at) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT(consumer, stream) DO UPDATE SET updated_at = excluded.updated_at,
              stored_offset = max(stored_offset, excluded.stored_offset)
            """)
        begin = try database.prepare("BEGIN IMMEDIATE")
        commit = try database.prepare("COMMIT")
        rollback = try database.prepare("ROLLBACK")
    }

    /// A database written before results carried `replays` gets the column (0: never replayed).
    private static func addReplaysColumn(_ database: SQLiteDatabase) throws(SQLiteError) {
        let probe = try database.prepare("SELECT count(*) FROM pragma_table_info('sends') WHERE name = 'replays'")
        guard try probe.step(), probe.int(0) == 0 else { return }
        probe.reset()
        try database.execute("ALTER TABLE sends ADD COLUMN replays INTEGER NOT NULL DEFAULT 0")
    }

    public func storedOffset(consumer: String, stream: String) throws -> Int64? {
        let query = try database.prepare("SELECT stored_offset FROM stream_offsets WHERE consumer = ?1 AND stream = ?2")
        try query.bind(1, consumer)
        try query.bind(2, stream)
        defer { query.reset() }
        return try query.step() ? query.int(0) : nil
    }

    public func funnel(_ scope: FunnelScope) throws -> Funnel {
        try FunnelQuery.run(database, scope: scope)
    }

    @discardableResult
    public func store(_ records: [EventStore.Record], positions: [EventStore.StreamPosition], now: Timestamp) throws -> EventStore.WriteSummary {
        var summary = EventStore.WriteSummary()
        try begin.run()
        do {
            for record in records {
                switch record {
                case .send(let r):
                    try insertSend.bind(1, r.jobID)
                    try insertSend.bind(2, r.mnMessageID)
                    try insertSend.bind(3, r.appID)
                    try insertSend.bind(4, r.campaign)
                    try insertSend.bind(5, r.outcome.rawValue)
                    try insertSend.bind(6, r.error?.code)
                    try insertSend.bind(7, Int64(r.attempts))
                    try insertSend.bind(8, r.completedAt.description)
                    try insertSend.bind(9, Int64(r.replays))
                    try insertSend.run()
                case .event(let e):
                    try insertEvent.bind(1, EventStore.key(of: e))
                    try insertEvent.bind(2, e.mnMessageID)
                    try insertEvent.bind(3, e.eventType.rawValue)
                    try insertEvent.bind(4, e.appID)
                    try insertEvent.bind(5, e.occurredAt?.description)
                    try insertEvent.bind(6, e.eventID)
                    try insertEvent.bind(7, now.description)
                    try insertEvent.run()
                }
                if database.changes == 0 {
                    summary.duplicates += 1
                } else if case .event = record {
                    summary.eventsInserted += 1
                } else {
                    summary.sendsInserted += 1
                }
            }
            for position in positions {
                try upsertOffset.bind(1, position.consumer)
                try upsertOffset.bind(2, position.stream)
                try upsertOffset.bind(3, position.offset)
                try upsertOffset.bind(4, now.description)
                try upsertOffset.run()
            }
            try commit.run()
        } catch {
            try? rollback.run()
            throw error
        }
        return summary
    }
}
