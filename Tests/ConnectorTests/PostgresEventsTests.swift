import AMQP
import BrokerHarness
@testable import EventStorage
import Foundation
import PushCore
import Testing
@testable import Connector

/// `push-connector events --db postgres://…` with the real broker and a real PostgreSQL: a
/// consumer SIGKILLed mid-batch, two consumers at once on one database, and the database
/// stopped mid-run.
@Suite(.serialized, .timeLimit(.minutes(2))) struct PostgresEventsTests {
    /// Publishes `events` distinct events to the events queue and `sends` results to the results
    /// stream (confirmed).
    static func publish(_ f: PipelineFixture, events: Range<Int>, sends: Range<Int>) async throws {
        let publisher = try await ConfirmingPublisher.connect(settings: f.settings)
        let bodies: [(exchange: String, key: String, body: String)] = events.map { i in
            (f.topology.eventsExchange, "",
             eventJSON(["receive", "open", "click", "dismiss"][i % 4], "mnid2m.7.\(i / 4).1.1.1", extra: #","event_id":"e\#(i)""#))
        } + sends.map { i in
            let r = SendResult(jobID: "pg-\(i / 10)", appID: "shop-android", mnMessageID: "mnid2m.8.\(i).1.1.1", campaign: nil,
                               target: ("token", "dev-\(i)"), outcome: .sent, attempts: 1, completedAt: Timestamp(secondsSince1970: 1_764_500_000))
            return (f.topology.resultsExchange, r.routingKey, r.encoded().encodedString())
        }
        for chunk in stride(from: 0, to: bodies.count, by: 2000) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for m in bodies[chunk..<min(chunk + 2000, bodies.count)] {
                    group.addTask { try await publisher.publish(exchange: m.exchange, routingKey: m.key, body: Data(m.body.utf8)) }
                }
                try await group.waitForAll()
            }
        }
        await publisher.close()
    }

    /// Events, sends and the `events` group's stored offset, read in one snapshot.
    static func stored(_ url: String) throws -> (events: Int, sends: Int, offset: Int64?) {
        let rows = try PostgresDatabase(url: url).execute("""
            SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM sends),
                   (SELECT stored_offset FROM stream_offsets WHERE consumer = 'events')
            """)
        return (Int(rows.integer(0, 0) ?? 0), Int(rows.integer(0, 1) ?? 0), rows.integer(0, 2))
    }

    /// Polls `/healthz` until `condition` holds for its answer (status, body); returns it.
    static func health(_ service: RunningEvents, until condition: (Int, String) -> Bool) async throws -> (Int, String) {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let answer = try await eventsHTTP("GET", service.base + "/healthz")
            if condition(answer.0, answer.1) { return answer }
            guard ContinuousClock.now < deadline else { throw FixtureError("/healthz still answers \(answer)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    func stop(_ process: Process) {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    @Test func aConsumerKilledMidBatchAndRestartedCountsEverySendAndEventOnce() async throws {
        let f = try await PipelineFixture()
        let db = try await PostgresEventStoreTests.freshDatabase()
        let events = 6_000, sends = 4_000
        try await Self.publish(f, events: 0..<events, sends: 0..<sends)

        let first = try f.startEventsConsumer(db: db)
        try await eventually("a first part stored") { let s = try? Self.stored(db); return (s?.events ?? 0) >= 1000 && (s?.sends ?? 0) >= 600 }
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        let atKill = try Self.stored(db)
        #expect(atKill.events < events && atKill.sends < sends, "the kill came too late to be mid-run")
        #expect(atKill.offset.map { $0 + 1 } == Int64(atKill.sends), "offset \(atKill.offset ?? -1) stored with \(atKill.sends) sends")

        let second = try f.startEventsConsumer(db: db)
        defer { if second.isRunning { kill(second.processIdentifier, SIGKILL) } }
        try await eventually("everything stored") { let s = try Self.stored(db); return s.events >= events && s.sends >= sends }
        try await eventually("the queue drained") { try f.messageCount(f.topology.eventsQueue) == 0 }
        stop(second)
        #expect(second.terminationStatus == 0)
        let funnel = try PostgresEventStore(url: db).funnel(.all)
        #expect(funnel.unlinkedEvents == events && funnel.recipients == sends)
        #expect(try Self.stored(db).offset == Int64(sends - 1), "resumed and read the stream to its end")
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0)
    }

    /// Two processes start at once on an empty database (both create the schema), share the
    /// events queue and each read the whole results stream in the one `events` group.
    @Test func twoConsumersAtOnceOnOneDatabaseCountEachSendAndEventOnce() async throws {
        let f = try await PipelineFixture()
        let db = try await PostgresEventStoreTests.freshDatabase()
        let events = 8_000, sends = 4_000
        try await Self.publish(f, events: 0..<events / 2, sends: 0..<sends / 2)
        let logs = [f.directory + "/events-a.log", f.directory + "/events-b.log"]
        let consumers = [try f.startEventsConsumer(db: db, log: logs[0]), try f.startEventsConsumer(db: db, log: logs[1])]
        defer { for c in consumers where c.isRunning { kill(c.processIdentifier, SIGKILL) } }
        try await Self.publish(f, events: events / 2..<events, sends: sends / 2..<sends)
        try await eventually("everything stored") { let s = try Self.stored(db); return s.events >= events && s.sends >= sends }
        try await eventually("the queue drained") { try f.messageCount(f.topology.eventsQueue) == 0 }
        // Both stay up to the end (no failed transaction ended either), then stop cleanly.
        #expect(consumers.filter { !$0.isRunning }.isEmpty)
        for c in consumers { stop(c) }
        #expect(consumers.map(\.terminationStatus) == [0, 0])
        let s = try Self.stored(db)
        #expect(s.events == events && s.sends == sends)
        #expect(s.offset == Int64(sends - 1))
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0)
        // Rows both wrote at once were skipped, never a failed transaction (unique violation, deadlock).
        for log in logs {
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(!text.contains("transaction failed"), "\(text.prefix(600))")
        }
    }

    /// PostgreSQL halted mid-run: `/healthz` reports the database, nothing is acked or
    /// dead-lettered meanwhile, and once it is back every record is stored exactly once.
    @Test func postgresStoppedMidRunHoldsTheBatchesAndStoresThemWhenItIsBack() async throws {
        let f = try await PipelineFixture()
        let server = try await TestPostgresServer.start()
        defer { Task { await server.stop() } }
        // The test servers commit asynchronously (speed); a halt is a crash: commits acked just
        // before it must survive it, as they do on a production server.
        try PostgresDatabase(url: server.url).execute("ALTER DATABASE push SET synchronous_commit = on")
        // Events published while the database is away fit one batch: every failed transaction is
        // a failed attempt for each of them.
        let events = 1_300, sends = 1_000
        let service = try RunningEvents(settings: f.settings, topology: f.topology, database: server.url)
        try await Self.publish(f, events: 0..<1_000, sends: 0..<sends / 2)
        try await eventually("the first part stored") { let s = try Self.stored(server.url); return s.events >= 1_000 && s.sends >= sends / 2 }

        try await server.halt()
        try await Self.publish(f, events: 1_000..<events, sends: 0..<0)
        let health = try await Self.health(service, until: { $0 == 503 && $1.contains("database") })
        #expect(health.1.contains("cannot connect to \(PostgresDatabase.redact(server.url))"), "\(health)")
        // Long enough for a record to go through more failed transactions than `maxStoreAttempts`.
        try await eventually("the writer tried and failed") { service.service.metrics.storeFailures.value >= 6 }
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0, "nothing dead-lettered while the database is away")

        try await Self.publish(f, events: 0..<0, sends: sends / 2..<sends)
        try await server.resume()
        try await eventually("everything stored") { let s = try? Self.stored(server.url); return s?.events == events && s?.sends == sends }
        try await eventually("the queue drained") { try f.messageCount(f.topology.eventsQueue) == 0 }
        _ = try await Self.health(service, until: { status, _ in status == 200 })
        await service.stop()
        let s = try Self.stored(server.url)
        #expect(s.events == events && s.sends == sends && s.offset == Int64(sends - 1))
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0)
    }
}
