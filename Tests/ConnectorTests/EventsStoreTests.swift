@testable import EventStorage
import Foundation
import PushCore
@testable import PushEvents
import Testing
@testable import Connector

/// The SQLite event store and the funnel query, on a real database file.
@Suite(.timeLimit(.minutes(1))) struct EventsStoreTests {
    static func result(_ job: String, _ id: String, _ outcome: SendOutcome, campaign: String? = "C1", app: String = "shop-android",
                       at seconds: Double = 1_800_000_000, replays: Int = 0) -> SendResult {
        SendResult(jobID: job, appID: app, mnMessageID: id, campaign: campaign, target: ("token", "t-\(id)"), outcome: outcome,
                   attempts: 1, completedAt: Timestamp(secondsSince1970: seconds), replays: replays)
    }

    static func event(_ type: PushEventType, _ id: String, at: Double? = nil, eventID: String? = nil) -> PushEvent {
        PushEvent(eventType: type, mnMessageID: id, appID: "shop-android", occurredAt: at.map(Timestamp.init(secondsSince1970:)), eventID: eventID)
    }

    @Test func theSameEventTwiceCountsOnceAcrossTransactions() throws {
        let path = try temporaryDirectory() + "/events.db"
        let store = try SQLiteEventStore(path: path)
        let click = Self.event(.click, "mnid2m.1.1.1.1.1", at: 1_800_000_100)
        let first = try store.store([.send(Self.result("j", "mnid2m.1.1.1.1.1", .sent)), .event(click), .event(click)])
        #expect(first == EventStore.WriteSummary(eventsInserted: 1, sendsInserted: 1, duplicates: 1))
        let again = try store.store([.send(Self.result("j", "mnid2m.1.1.1.1.1", .sent)), .event(click)])
        #expect(again.inserted == 0 && again.duplicates == 2)
        let funnel = try FunnelQuery.run(path: path, scope: .job("j"))
        #expect(funnel.clicked == 1 && funnel.events == 1 && funnel.recipients == 1)
    }

    /// The file holds tokens and message ids: created 0600 with its WAL and shared-memory files,
    /// even under umask 000 (the second audit found 0644).
    @Test func aNewDatabaseFileIsReadableByItsOwnerOnlyWhateverTheUmask() throws {
        let path = try temporaryDirectory() + "/events.db"
        let previous = umask(0)
        defer { umask(previous) }
        let store = try SQLiteEventStore(path: path)
        try store.store([.send(Self.result("j", "mnid2m.9.9.9.9.9", .sent))])
        for file in [path, path + "-wal", path + "-shm"] {
            let mode = try #require(FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
            #expect(mode == 0o600, "\(file): \(String(mode, radix: 8))")
        }
    }

    /// Second audit, finding 5: app A posts an open and a click for app B's message under its
    /// own App ID: B's funnel counts neither, they stay unlinked, and B's own open at the same
    /// time is stored (the key is per App ID), not dropped as a duplicate.
    static func anotherAppsEventsNeverCount(in store: any EventStoring, funnel: (FunnelScope) throws -> Funnel) throws {
        let id = "mnid2m.5.5.5.5.5"
        let forged = { (type: PushEventType) in PushEvent(eventType: type, mnMessageID: id, appID: "app-a", occurredAt: Timestamp(secondsSince1970: 7)) }
        try store.store([.send(result("j", id, .sent, app: "app-b")), .event(forged(.open)), .event(forged(.click))])
        var b = try funnel(.app("app-b"))
        #expect(b.opened == 0 && b.clicked == 0 && b.events == 0, "\(b)")
        #expect(try funnel(.all).unlinkedEvents == 2)
        let own = PushEvent(eventType: .open, mnMessageID: id, appID: "app-b", occurredAt: Timestamp(secondsSince1970: 7))
        let written = try store.store([.event(own)])
        #expect(written.eventsInserted == 1 && written.duplicates == 0)
        b = try funnel(.app("app-b"))
        #expect(b.opened == 1 && b.clicked == 0 && b.events == 1, "\(b)")
        #expect(try funnel(.job("j")).opened == 1 && funnel(.all).opened == 1)
        // An event that names no App ID (event keys off) still counts for the send.
        try store.store([.event(PushEvent(eventType: .click, mnMessageID: id, appID: nil, occurredAt: nil))])
        #expect(try funnel(.app("app-b")).clicked == 1)
    }

    @Test func anotherAppsEventForAMessageNeverCountsInItsFunnel() throws {
        let path = try temporaryDirectory() + "/events.db"
        let store = try SQLiteEventStore(path: path)
        try Self.anotherAppsEventsNeverCount(in: store) { try FunnelQuery.run(path: path, scope: $0) }
    }

    @Test func eventsAreKeyedOnEventIDElseOnMessageTypeAndTime() throws {
        let id = "mnid2m.2.2.2.2.2"
        #expect(EventStore.key(of: Self.event(.open, id, at: 1, eventID: "e-1")) == "id:shop-android:e-1")
        #expect(EventStore.key(of: Self.event(.open, id, at: 1)) != EventStore.key(of: Self.event(.open, id, at: 2)))
        #expect(EventStore.key(of: Self.event(.open, id)) == EventStore.key(of: Self.event(.open, id)))
        #expect(EventStore.key(of: Self.event(.open, id)) != EventStore.key(of: Self.event(.click, id)))
        // Two opens of one message at different times are two events but one opened message.
        let path = try temporaryDirectory() + "/events.db"
        let store = try SQLiteEventStore(path: path)
        try store.store([.send(Self.result("j", id, .sent)), .event(Self.event(.open, id, at: 1)), .event(Self.event(.open, id, at: 2))])
        let funnel = try FunnelQuery.run(path: path, scope: .all)
        #expect(funnel.opened == 1 && funnel.events == 2)
    }

    @Test func anEventStoredBeforeItsSendIsLinkedWhenTheSendArrives() throws {
        let path = try temporaryDirectory() + "/events.db"
        let store = try SQLiteEventStore(path: path)
        try store.store([.event(Self.event(.receive, "mnid2m.3.3.3.3.3", at: 5))])
        var funnel = try FunnelQuery.run(path: path, scope: .all)
        #expect(funnel.received == 0 && funnel.unlinkedEvents == 1)
        try store.store([.send(Self.result("late", "mnid2m.3.3.3.3.3", .sent))])
        funnel = try FunnelQuery.run(path: path, scope: .job("late"))
        #expect(funnel.received == 1 && funnel.sent == 1)
        #expect(try FunnelQuery.run(path: path, scope: .all).unlinkedEvents == 0)
    }

    @Test func funnelCountsOutcomesAndRatesPerScope() throws {
        let path = try temporaryDirectory() + "/events.db"
        let store = try SQLiteEventStore(path: path)
        try store.store([
            .send(Self.result("a", "mnid2m.1.0.0.0.1", .sent)), .send(Self.result("a", "mnid2m.1.0.0.0.2", .sent)),
            .send(Self.result("a", "mnid2m.1.0.0.0.3", .invalidToken)), .send(Self.result("a", "mnid2m.1.0.0.0.4", .rejected)),
            .send(Self.result("b", "mnid2m.1.0.0.0.5", .expired, campaign: "C2", app: "other")),
            .send(Self.result("a", "mnid2m.1.0.0.0.6", .deadLettered)),
            .event(Self.event(.open, "mnid2m.1.0.0.0.1")), .event(Self.event(.click, "mnid2m.1.0.0.0.1")),
            .event(Self.event(.dismiss, "mnid2m.1.0.0.0.2")),
        ])
        let a = try FunnelQuery.run(path: path, scope: .campaign("C1"))
        #expect(a.recipients == 5 && a.sent == 2 && a.invalidTokens == 1 && a.rejected == 1 && a.expired == 0 && a.deadLettered == 1)
        #expect(a.opened == 1 && a.clicked == 1 && a.dismissed == 1 && a.rate(a.opened) == 0.5)
        let b = try FunnelQuery.run(path: path, scope: .app("other"))
        #expect(b.recipients == 1 && b.expired == 1 && b.rate(b.opened) == nil)
        let json = a.json(scope: .campaign("C1"))
        #expect(json["dead_lettered"] == 1)
        #expect(json["rates"]?["opened"] == .double(0.5))
        #expect(a.text(scope: .campaign("C1")).contains("\ndead-lettered    1\n"))
    }

    /// A recipient dead-lettered, then replayed and sent, counts as sent whatever order the two
    /// results arrive in; a stale or duplicate result changes nothing.
    @Test func eachRecipientCountsOnceUnderItsLatestOutcome() throws {
        let path = try temporaryDirectory() + "/events.db"
        let store = try SQLiteEventStore(path: path)
        let t = 1_800_000_000.0
        // Dead-lettered first, then the replay (one more replay, later) sent it.
        try store.store([.send(Self.result("j", "mnid2m.9.0.0.0.1", .deadLettered, at: t))])
        #expect(try store.store([.send(Self.result("j", "mnid2m.9.0.0.0.1", .sent, at: t + 60, replays: 1))]).sendsInserted == 1)
        // The other way round (results read out of order): the stale dead letter is ignored.
        try store.store([.send(Self.result("j", "mnid2m.9.0.0.0.2", .sent, at: t + 60, replays: 1))])
        #expect(try store.store([.send(Self.result("j", "mnid2m.9.0.0.0.2", .deadLettered, at: t))]).duplicates == 1)
        // Same replay count and second: the outcome that reached FCM wins.
        try store.store([.send(Self.result("j", "mnid2m.9.0.0.0.3", .sent, at: t)), .send(Self.result("j", "mnid2m.9.0.0.0.3", .deadLettered, at: t))])
        // More replays win over a later clock (a worker whose clock runs behind).
        try store.store([.send(Self.result("j", "mnid2m.9.0.0.0.4", .deadLettered, at: t + 600)),
                         .send(Self.result("j", "mnid2m.9.0.0.0.4", .sent, at: t + 1, replays: 1))])
        // Dead-lettered again after a replay: the latest is dead_lettered.
        try store.store([.send(Self.result("j", "mnid2m.9.0.0.0.5", .deadLettered, at: t)),
                         .send(Self.result("j", "mnid2m.9.0.0.0.5", .deadLettered, at: t + 60, replays: 1))])
        let funnel = try FunnelQuery.run(path: path, scope: .job("j"))
        #expect(funnel.recipients == 5 && funnel.sent == 4 && funnel.deadLettered == 1, "\(funnel)")
    }

    /// A database written before results carried `replays` is upgraded in place and keeps its rows.
    @Test func aDatabaseWithoutTheReplaysColumnIsUpgradedAndKeepsItsRows() throws {
        let path = try temporaryDirectory() + "/events.db"
        let old = try SQLiteDatabase(path: path)
        try old.execute("""
            CREATE TABLE sends(job_id TEXT NOT NULL, mn_message_id TEXT NOT NULL, app_id TEXT NOT NULL, campaign TEXT,
              outcome TEXT NOT NULL, error_code TEXT, attempts INTEGER NOT NULL, completed_at TEXT NOT NULL,
              PRIMARY KEY (job_id, mn_message_id)) WITHOUT ROWID;
            INSERT INTO sends VALUES ('j', 'mnid2m.8.0.0.0.1', 'shop-android', NULL, 'sent', NULL, 1, '2027-01-15T08:00:00Z');
            """)
        let store = try SQLiteEventStore(path: path)
        try store.store([.send(Self.result("j", "mnid2m.8.0.0.0.2", .deadLettered)),
                         .send(Self.result("j", "mnid2m.8.0.0.0.2", .sent, at: 1_800_000_100, replays: 1))])
        let funnel = try FunnelQuery.run(path: path, scope: .job("j"))
        #expect(funnel.recipients == 2 && funnel.sent == 2 && funnel.deadLettered == 0)
    }

    @Test func eventKeysCompareWholeKeysOnly() {
        let keys = EventKeys(["shop-android": "0123456789abcdef"])
        #expect(keys.allows(appID: "shop-android", presented: "0123456789abcdef"))
        #expect(!keys.allows(appID: "shop-android", presented: "0123456789abcde"))
        #expect(!keys.allows(appID: "shop-android", presented: "0123456789abcdefX"))
        #expect(!keys.allows(appID: "shop-android", presented: nil))
        #expect(!keys.allows(appID: "other", presented: "0123456789abcdef"))
        #expect(!keys.allows(appID: nil, presented: "0123456789abcdef"))
    }

    @Test func eventKeysRefuseAPresentedKeyLongerBy256Bytes() {
        // A length difference that is a multiple of 256 must not vanish in the comparison.
        let key = "0123456789abcdef"
        let keys = EventKeys(["shop-android": key])
        #expect(!keys.allows(appID: "shop-android", presented: key + String(repeating: "\0", count: 256)))
        #expect(!keys.allows(appID: "shop-android", presented: key + String(repeating: "A", count: 512)))
        #expect(!EventKeys.constantTimeEquals(Array(key.utf8) + [UInt8](repeating: 0, count: 256), Array(key.utf8)))
        #expect(EventKeys.constantTimeEquals(Array(key.utf8), Array(key.utf8)))
    }

    @Test func statsAndEventsRefuseBadArgumentsWithExitCode2() async throws {
        #expect(await runCLI(["stats"]).0 == 2)
        #expect(await runCLI(["stats", "--db", "/nonexistent/events.db"]).0 == 2)
        let path = try temporaryDirectory() + "/events.db"
        _ = try SQLiteEventStore(path: path)
        let (code, _, err) = await runCLI(["stats", "--db", path, "--job-id", "j", "--campaign", "c"])
        #expect(code == 2 && err.contains("at most one"))
        #expect(await runCLI(["stats", "--db", path]).0 == 0)
        #expect(await runCLI(["events", "--no-http", "--no-consume"]).0 == 2)
        #expect(await runCLI(["events", "--db", path]).0 == 2)  // --http missing
        #expect(await runCLI(["events", "--http", "127.0.0.1:x", "--no-consume"]).0 == 2)
    }
}
