import BrokerHarness
@testable import EventStorage
import Foundation
import PushCore
import Synchronization
import Testing
@testable import Connector

/// The PostgreSQL events store against a real server (scripts/test-postgres.sh): idempotent
/// writes, the latest-outcome rule, the funnel the same as SQLite's, and several writers at once.
@Suite(.serialized, .timeLimit(.minutes(1))) struct PostgresEventStoreTests {
    /// The URL of a fresh database for one test.
    static func freshDatabase() async throws -> String {
        let admin = try PostgresDatabase(url: try await TestPostgres.url())
        let name = TestPostgres.uniqueDatabaseName("events")
        try admin.execute("CREATE DATABASE \(name)")
        return try await TestPostgres.url(database: name)
    }

    typealias R = EventsStoreTests

    @Test func theSameBatchTwiceCountsOnce() async throws {
        let store = try PostgresEventStore(url: try await Self.freshDatabase())
        let click = R.event(.click, "mnid2m.1.1.1.1.1", at: 1_800_000_100)
        let batch: [EventStore.Record] = [.send(R.result("j", "mnid2m.1.1.1.1.1", .sent)), .event(click), .event(click)]
        let first = try store.store(batch)
        #expect(first == EventStore.WriteSummary(eventsInserted: 1, sendsInserted: 1, duplicates: 1))
        let again = try store.store(batch)
        #expect(again.inserted == 0 && again.duplicates == 3)
        let funnel = try store.funnel(.job("j"))
        #expect(funnel.clicked == 1 && funnel.events == 1 && funnel.recipients == 1 && funnel.sent == 1)
    }

    @Test func anotherAppsEventForAMessageNeverCountsInItsFunnel() async throws {
        let store = try PostgresEventStore(url: try await Self.freshDatabase())
        try R.anotherAppsEventsNeverCount(in: store) { try store.funnel($0) }
    }

    @Test func aSendKeepsItsLatestOutcomeWhateverTheOrder() async throws {
        let store = try PostgresEventStore(url: try await Self.freshDatabase())
        let id = "mnid2m.4.4.4.4.4"
        // Dead-lettered, then replayed and sent: written newest first, in two transactions and in one.
        try store.store([.send(R.result("j", id, .sent, at: 1_800_000_200, replays: 1))])
        try store.store([.send(R.result("j", id, .deadLettered, at: 1_800_000_100))])
        try store.store([.send(R.result("k", id, .sent, at: 1_800_000_200, replays: 1)), .send(R.result("k", id, .deadLettered, at: 1_800_000_300))])
        #expect(try store.funnel(.job("j")).sent == 1)
        #expect(try store.funnel(.job("k")).sent == 1)
        #expect(try store.funnel(.all).deadLettered == 0)
    }

    @Test func aStoredOffsetNeverMovesBack() async throws {
        let store = try PostgresEventStore(url: try await Self.freshDatabase())
        let position = { (offset: Int64) in EventStore.StreamPosition(consumer: "g", stream: "s", offset: offset) }
        #expect(try store.storedOffset(consumer: "g", stream: "s") == nil)
        try store.store([], positions: [position(10)])
        try store.store([], positions: [position(5)])
        #expect(try store.storedOffset(consumer: "g", stream: "s") == 10)
        try store.store([], positions: [position(11)])
        #expect(try store.storedOffset(consumer: "g", stream: "s") == 11)
        #expect(try store.storedOffset(consumer: "other", stream: "s") == nil)
    }

    /// Varied input (every outcome, replays, duplicates, events with and without `event_id`,
    /// unlinked events) into SQLite in order and into PostgreSQL shuffled, in other batches: the
    /// same funnel for every scope.
    @Test func theFunnelIsTheSameAsSQLitesForTheSameInput() async throws {
        let records = FunnelInput.records()
        let sqlite = try SQLiteEventStore(path: try temporaryDirectory() + "/events.db")
        for chunk in stride(from: 0, to: records.count, by: 50) { try sqlite.store(Array(records[chunk..<min(chunk + 50, records.count)])) }
        let postgres = try PostgresEventStore(url: try await Self.freshDatabase())
        var generator = FunnelInput.Generator(seed: 7)
        let shuffled = records.shuffled(using: &generator)
        for chunk in stride(from: 0, to: shuffled.count, by: 37) { try postgres.store(Array(shuffled[chunk..<min(chunk + 37, shuffled.count)])) }

        let all = try sqlite.funnel(.all)
        #expect(all.recipients == FunnelInput.recipients, "the input's own count of (job, message) pairs")
        #expect(all.unlinkedEvents > 0 && all.opened > 0 && all.deadLettered > 0 && all.cancelled > 0 && all.sent > 0)
        for scope in FunnelInput.scopes {
            #expect(try postgres.funnel(scope) == sqlite.funnel(scope), "\(scope)")
        }
    }

    /// Two writers with overlapping batches in opposite orders and one consumer group: no
    /// transaction fails (no unique violation, no deadlock), each record counts once, and the
    /// offset ends at the highest either wrote.
    @Test func twoWritersOfOverlappingBatchesAtOnceCountEachRecordOnce() async throws {
        let url = try await Self.freshDatabase()
        let records = FunnelInput.records()
        let batches = stride(from: 0, to: records.count, by: 40).map { Array(records[$0..<min($0 + 40, records.count)]) }
        let stores = [try PostgresEventStore(url: url), try PostgresEventStore(url: url)]
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { writer in
            let order = writer == 0 ? Array(batches.indices) : batches.indices.reversed()
            for index in order {
                do {
                    let position = EventStore.StreamPosition(consumer: "events", stream: "results", offset: Int64(index))
                    try stores[writer].store(writer == 0 ? batches[index] : batches[index].reversed(), positions: [position])
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.prefix(2))")
        let sqlite = try SQLiteEventStore(path: try temporaryDirectory() + "/events.db")
        try sqlite.store(records)
        #expect(try stores[0].funnel(.all) == sqlite.funnel(.all))
        #expect(try stores[0].storedOffset(consumer: "events", stream: "results") == Int64(batches.count - 1))
    }

    @Test func consumersStartingAtOnceOnAnEmptyDatabaseAllCreateTheSchema() async throws {
        let url = try await Self.freshDatabase()
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            do { _ = try PostgresEventStore(url: url) } catch { failures.withLock { $0.append("\(error)") } }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.first ?? "")")
    }
}

/// A deterministic mixed input for funnel comparisons.
enum FunnelInput {
    static let jobs = ["ja", "jb", "jc"]
    static let messages = 120
    /// Distinct (job, message) pairs in `records()`.
    static let recipients = messages

    static var scopes: [FunnelScope] {
        [.all] + jobs.map { .job($0) } + ["C1", "C2"].map { .campaign($0) } + ["shop-android", "shop-ios"].map { .app($0) }
    }

    static func records() -> [EventStore.Record] {
        let outcomes: [SendOutcome] = [.sent, .sent, .sent, .validated, .invalidToken, .rejected, .expired, .deadLettered, .cancelled]
        var records: [EventStore.Record] = []
        for i in 0..<messages {
            let id = "mnid2m.9.\(i).1.1.1"
            let job = jobs[i % jobs.count]
            let campaign = i % 5 == 0 ? nil : "C\(i % 2 + 1)"
            let app = i % 3 == 0 ? "shop-ios" : "shop-android"
            let outcome = outcomes[i % outcomes.count]
            let at = Double(1_800_000_000 + i * 10)
            func result(_ o: SendOutcome, _ seconds: Double, replays: Int = 0) -> EventStore.Record {
                .send(EventsStoreTests.result(job, id, o, campaign: campaign, app: app, at: seconds, replays: replays))
            }
            records.append(result(outcome, at))
            if i % 4 == 0 { records.append(result(outcome, at)) }  // a redelivery
            if outcome == .deadLettered && i % 16 == 7 {  // replayed and sent
                records.append(result(.sent, at + 5, replays: 1))
            }
            if i % 9 == 0 { records.append(result(.deadLettered, at - 5)) }  // an older outcome
            for (n, type) in [PushEventType.receive, .open, .click, .dismiss].enumerated() where (i + n) % (n + 2) == 0 {
                records.append(.event(EventsStoreTests.event(type, id, at: at + Double(n))))
                if i % 6 == 0 { records.append(.event(EventsStoreTests.event(type, id, at: at + Double(n) + 1, eventID: "e\(i)-\(n)"))) }
                if i % 7 == 0 { records.append(.event(EventsStoreTests.event(type, id, at: at + Double(n)))) }  // resent
            }
        }
        for i in 0..<15 { records.append(.event(EventsStoreTests.event(.open, "mnid2m.10.\(i).1.1.1", at: 1_800_000_000))) }
        return records
    }

    /// A small seeded generator (SplitMix64), for a reproducible shuffle.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}

/// `--db postgres://…` on the command line: accepted by `events --check` and `stats`, its
/// password never printed.
@Suite(.timeLimit(.minutes(1))) struct PostgresDatabaseOptionTests {
    @Test func eventsCheckAcceptsAPostgresURLAndMasksItsPassword() async throws {
        let (code, out, err) = await runCLI(["events", "--check", "--no-http", "--db", "postgres://push:hunter2@db.internal:5432/push"])
        #expect(code == 0, "\(err)")
        #expect(out.contains("postgres://push:***@db.internal:5432/push"), "\(out)")
        #expect(!(out + err).contains("hunter2"))
        let env = await runCLI(["events", "--check", "--no-http"], environment: ["PUSH_CONNECTOR_DB": "postgresql://push:hunter2@db/push"])
        #expect(env.0 == 0 && env.1.contains("postgresql://push:***@db/push") && !(env.1 + env.2).contains("hunter2"), "\(env)")
    }

    /// The second audit's forms: `--check` and `stats` errors printed these verbatim.
    @Test(arguments: ["postgres://push@127.0.0.1:1/push?p%61ssword=hunter2", "postgres://push@127.0.0.1:1/push?sslpassword=hunter2",
                      "postgres://push@127.0.0.1:1/push?password%3Dhunter2", "postgres://push:hunter2@127.0.0.1:1/push?password=hunter2"])
    func everyPasswordFormIsMaskedByCheckAndStats(url: String) async throws {
        let check = await runCLI(["events", "--check", "--no-http", "--db", url])
        #expect(!(check.1 + check.2).contains("hunter2"), "\(check)")
        let stats = await runCLI(["stats", "--db", url])
        #expect(stats.0 != 0 && !(stats.1 + stats.2).contains("hunter2"), "\(stats)")
    }

    @Test func aMalformedPostgresURLIsRefusedWithoutItsPassword() async throws {
        let (code, out, err) = await runCLI(["events", "--check", "--no-http", "--db", "postgres://push:hunter2@db/push?nosuchoption=1"])
        #expect(code == 2, "\(out) \(err)")
        #expect(err.contains("not a valid PostgreSQL URL") && !(out + err).contains("hunter2"), "\(err)")
    }

    @Test func statsReadsTheFunnelFromAPostgresURL() async throws {
        let url = try await PostgresEventStoreTests.freshDatabase()
        try PostgresEventStore(url: url).store(FunnelInput.records())
        let sqlite = try temporaryDirectory() + "/events.db"
        try SQLiteEventStore(path: sqlite).store(FunnelInput.records())
        let fromPostgres = await runCLI(["stats", "--db", url, "--json"])
        let fromSQLite = await runCLI(["stats", "--db", sqlite, "--json"])
        #expect(fromPostgres.0 == 0, "\(fromPostgres.2)")
        #expect(fromPostgres.1 == fromSQLite.1 && fromPostgres.1.contains("\"recipients\":\(FunnelInput.recipients)"), "\(fromPostgres.1)")
    }
}
