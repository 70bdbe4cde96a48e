import AMQP
@testable import EventStorage
import Foundation
import PushCore
import Testing
@testable import Connector

/// `push-connector events` as a real process, killed with SIGKILL mid-run.
@Suite(.serialized, .timeLimit(.minutes(3))) struct EventsProcessTests {
    func storedEvents(_ db: String) -> Int {
        (try? FunnelQuery.run(path: db, scope: .all).unlinkedEvents) ?? 0
    }

    /// Sends stored and the results-stream offset stored for the events consumer, read together.
    func storedSends(_ db: String) throws -> (sends: Int64, offset: Int64?) {
        let database = try SQLiteDatabase(path: db, readOnly: true)
        let count = try database.prepare("SELECT count(*) FROM sends")
        _ = try count.step()
        let offset = try database.prepare("SELECT stored_offset FROM stream_offsets WHERE consumer = 'events'")
        return (count.int(0), try offset.step() ? offset.int(0) : nil)
    }

    /// Events from the events queue and results from the stream; the consumer is SIGKILLed with
    /// both half stored, then restarted: every event and every send is stored once, and at the
    /// kill the stored offset covered exactly the sends stored (one transaction for both).
    @Test func theConsumerKilledMidBatchAndRestartedLosesAndDoubleCountsNothing() async throws {
        let f = try await PipelineFixture()
        let db = f.directory + "/events.db"
        let total = 20_000, sends = 10_000
        let publisher = try await ConfirmingPublisher.connect(settings: f.settings)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<total {
                let body = eventJSON(["receive", "open", "click", "dismiss"][i % 4], "mnid2m.7.\(i / 4).1.1.1", extra: #","event_id":"e\#(i)""#)
                group.addTask { try await publisher.publish(exchange: f.topology.eventsExchange, routingKey: "", body: Data(body.utf8)) }
                if i % 2000 == 1999 { try await group.waitForAll() }
            }
            try await group.waitForAll()
        }
        let results = (0..<sends).map { i in
            SendResult(jobID: "kill-\(i / 10)", appID: "shop-android", mnMessageID: "mnid2m.8.\(i).1.1.1", campaign: nil,
                       target: ("token", "dev-\(i)"), outcome: .sent, attempts: 1, completedAt: Timestamp(secondsSince1970: 1_764_500_000))
        }
        for chunk in stride(from: 0, to: sends, by: 2000) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for r in results[chunk..<min(chunk + 2000, sends)] {
                    group.addTask {
                        try await publisher.publish(exchange: f.topology.resultsExchange, routingKey: r.routingKey,
                                                    body: Data(r.encoded().encodedString().utf8))
                    }
                }
                try await group.waitForAll()
            }
        }
        await publisher.close()

        let first = try f.startEventsConsumer(db: db)
        try await eventually("a first part stored") { try storedEvents(db) >= 1500 && storedSends(db).sends >= 1000 }
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        let storedAtKill = storedEvents(db)
        let (sendsAtKill, offsetAtKill) = try storedSends(db)
        #expect(storedAtKill < total && sendsAtKill < sends, "the kill came too late to be mid-run")
        #expect(offsetAtKill.map { $0 + 1 } == sendsAtKill, "offset \(offsetAtKill ?? -1) stored with \(sendsAtKill) sends")

        let second = try f.startEventsConsumer(db: db)
        defer { if second.isRunning { kill(second.processIdentifier, SIGKILL) } }
        try await eventually("everything stored", timeout: .seconds(90)) { try storedEvents(db) >= total && storedSends(db).sends >= sends }
        try await eventually("the queue drained") { try f.messageCount(f.topology.eventsQueue) == 0 }
        kill(second.processIdentifier, SIGTERM)
        second.waitUntilExit()
        #expect(second.terminationStatus == 0)
        let funnel = try FunnelQuery.run(path: db, scope: .all)
        #expect(funnel.unlinkedEvents == total)
        #expect(funnel.recipients == sends)
        #expect(try storedSends(db).offset == Int64(sends - 1), "resumed and read the stream to its end")
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0)
    }
}
