import PushCore

/// The events database model, shared by its engines (`SQLiteEventStore`, `PostgresEventStore`):
/// one row per send result (`sends`) and one per distinct event (`events`), linked by
/// `mn_message_id` at query time — so an event stored before its send is linked as soon as the
/// send arrives.
///
/// Idempotent under redelivery and under concurrent writers: a send is keyed on (`job_id`,
/// `mn_message_id`); an event on its `event_key` (see `key(of:)`). Writing the same record
/// twice changes nothing. A send row holds the recipient's latest outcome (contract: more
/// `replays`, then a later `completed_at`, then not `dead_lettered`): a result that is not later
/// is ignored, so a job dead-lettered and then replayed and sent counts as sent, whatever order
/// the results came in.
///
/// `stream_offsets` holds, per stream consumer group (e.g. `events`) and stream, the offset of
/// the last stream message whose records are stored: written in the same transaction as those
/// records, so after a crash the group resumes right after what it stored; it only ever moves
/// forward, also when several consumers of one group write it.
public enum EventStore {
    /// A record to store.
    public enum Record: Sendable {
        case send(SendResult)
        case event(PushEvent)
    }

    /// What one `store` call did.
    public struct WriteSummary: Sendable, Equatable {
        public var eventsInserted = 0
        /// Send rows inserted, or updated to a later outcome.
        public var sendsInserted = 0
        public var inserted: Int { eventsInserted + sendsInserted }
        /// Records already present (redeliveries, resent events, outcomes not later).
        public var duplicates = 0
    }

    /// A stream consumer group's position, stored with a batch of records.
    public struct StreamPosition: Sendable, Equatable {
        /// The consumer group's name (one row per name and stream): `events` by default.
        public var consumer: String
        public var stream: String
        /// The offset of the last message whose records are in this transaction or earlier ones.
        public var offset: Int64

        public init(consumer: String, stream: String, offset: Int64) {
            self.consumer = consumer
            self.stream = stream
            self.offset = offset
        }
    }

    /// The key an event counts once under: `id:<app_id>:<event_id>` when the app gave an
    /// `event_id`, else `at:<mn_message_id>:<event_type>:<occurred_at>@<app_id>` (`occurred_at`
    /// empty when absent — then one event of each type per message; `@<app_id>` only when the
    /// event names one). Per App ID: an event another app posted for this app's message never
    /// takes the key of this app's own (second audit, finding 5).
    public static func key(of event: PushEvent) -> String {
        if let id = event.eventID { return "id:\(event.appID ?? ""):\(id)" }
        return "at:\(event.mnMessageID):\(event.eventType.rawValue):\(event.occurredAt?.description ?? "")"
            + (event.appID.map { "@" + $0 } ?? "")
    }

    /// The condition tying an event `e` to the send `s` it counts for, in SQL both databases
    /// read: the same message, and the send's App ID unless the event names none.
    static let sameSend = "s.mn_message_id = e.mn_message_id AND (e.app_id IS NULL OR e.app_id = s.app_id)"

    /// True when `result` replaces `stored` under the latest-outcome rule: more replays, then a
    /// later `completed_at` (RFC 3339 UTC, whole seconds: text order is time order), then not
    /// dead-lettered.
    static func isLater(_ result: SendResult, than stored: SendResult) -> Bool {
        func rank(_ r: SendResult) -> (Int, String, Int) { (r.replays, r.completedAt.description, r.outcome == .deadLettered ? 0 : 1) }
        return rank(result) > rank(stored)
    }

    /// The INSERT of send rows given as `values` (SQL value lists) with the latest-outcome
    /// upsert, in the SQL SQLite and PostgreSQL share (`completed_at` compares as bytes).
    static func insertSends(values: String) -> String {
        """
        INSERT INTO sends(job_id, mn_message_id, app_id, campaign, outcome, error_code, attempts, completed_at, replays)
        VALUES \(values)
        ON CONFLICT (job_id, mn_message_id) DO UPDATE SET
          app_id = excluded.app_id, campaign = excluded.campaign, outcome = excluded.outcome,
          error_code = excluded.error_code, attempts = excluded.attempts, completed_at = excluded.completed_at,
          replays = excluded.replays
        WHERE (excluded.replays, excluded.completed_at, excluded.outcome <> 'dead_lettered')
            > (sends.replays, sends.completed_at, sends.outcome <> 'dead_lettered')
        """
    }

    /// True when a transaction failed because the database is unreachable, busy or out of room
    /// and may clear by itself (PostgreSQL: connection lost, deadlock, serialization failure;
    /// SQLite: another writer holding the lock past the busy timeout, a full disk, a read-only
    /// or unreadable file, an I/O error): the same batch is worth writing again once it
    /// answers, however long that takes, and the records are not at fault.
    public static func isTransient(_ error: any Error) -> Bool {
        if let error = error as? SQLiteError { return error.isTransient }
        guard let error = error as? PostgresError else { return false }
        return error.isConnectionLost || error.sqlState == "40P01" || error.sqlState == "40001"
    }
}
