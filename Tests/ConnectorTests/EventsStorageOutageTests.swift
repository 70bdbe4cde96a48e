import AMQP
@testable import EventStorage
import Foundation
import PushCore
import Testing
@testable import Connector

/// A SQLite file that another process holds locked (BEGIN IMMEDIATE) for longer than the busy
/// timeout: the events consumer keeps the events unacked and writes them once the lock goes,
/// none dead-lettered. Real process, real broker, the sqlite3 shell as the other writer
/// (issue 32, item 2).
@Suite(.serialized, .timeLimit(.minutes(3))) struct EventsStorageOutageTests {
    @Test func eventsPostedWhileTheDatabaseIsLockedAreStoredOnceItIsFree() async throws {
        let f = try await PipelineFixture()
        let db = f.directory + "/events.db"
        let consumer = try f.startEventsConsumer(db: db)
        defer { if consumer.isRunning { kill(consumer.processIdentifier, SIGKILL) } }
        try await eventually("the schema made") { FileManager.default.fileExists(atPath: db) && (try? FunnelQuery.run(path: db, scope: .all)) != nil }

        // The other writer: holds the write lock for 35 s (longer than five transactions that each
        // wait out the busy timeout of 5 s).
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        locker.arguments = [db]
        let input = Pipe()
        locker.standardInput = input
        locker.standardOutput = FileHandle.nullDevice
        try locker.run()
        try input.fileHandleForWriting.write(contentsOf: Data("BEGIN IMMEDIATE;\n".utf8))
        try await Task.sleep(for: .milliseconds(300))

        let total = 100
        let publisher = try await ConfirmingPublisher.connect(settings: f.settings)
        for i in 0..<total {
            let body = eventJSON("open", "mnid2m.9.\(i).1.1.1", extra: #","event_id":"locked-\#(i)""#)
            try await publisher.publish(exchange: f.topology.eventsExchange, routingKey: "", body: Data(body.utf8))
        }
        await publisher.close()
        try await Task.sleep(for: .seconds(35))
        #expect((try? FunnelQuery.run(path: db, scope: .all).unlinkedEvents) ?? 0 == 0, "stored through the lock?")
        try input.fileHandleForWriting.write(contentsOf: Data("COMMIT;\n.quit\n".utf8))
        try input.fileHandleForWriting.close()
        locker.waitUntilExit()

        try await eventually("every event stored", timeout: .seconds(30)) {
            ((try? FunnelQuery.run(path: db, scope: .all).unlinkedEvents) ?? 0) >= total
        }
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0, "events dead-lettered during the lock")
        kill(consumer.processIdentifier, SIGTERM)
        consumer.waitUntilExit()
        #expect(try FunnelQuery.run(path: db, scope: .all).unlinkedEvents == total)
    }
}
