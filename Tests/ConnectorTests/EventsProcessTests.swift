import AMQP
import Foundation
import PushCore
import Testing
@testable import Connector

/// `push-connector events` as a real process, killed with SIGKILL mid-run.
@Suite(.serialized, .timeLimit(.minutes(3))) struct EventsProcessTests {
    func startConsumer(_ f: PipelineFixture, db: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        process.arguments = ["events", "--no-http", "--db", db, "--amqp-url", f.broker.url, "--prefix", f.topology.prefix,
                             "--retry-tiers", "1", "--no-declare", "--batch-size", "100", "--batch-delay-ms", "5", "--log-level", "warn"]
        process.environment = ["PATH": "/usr/bin:/bin"]
        try process.run()
        return process
    }

    func storedEvents(_ db: String) -> Int {
        (try? FunnelQuery.run(path: db, scope: .all).unlinkedEvents) ?? 0
    }

    @Test func theConsumerKilledMidBatchAndRestartedLosesAndDoubleCountsNothing() async throws {
        let f = try await PipelineFixture()
        let db = f.directory + "/events.db"
        let total = 20_000
        let publisher = try await ConfirmingPublisher.connect(settings: f.settings)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<total {
                let body = eventJSON(["receive", "open", "click", "dismiss"][i % 4], "mnid2m.7.\(i / 4).1.1.1", extra: #","event_id":"e\#(i)""#)
                group.addTask { try await publisher.publish(exchange: f.topology.eventsExchange, routingKey: "", body: Data(body.utf8)) }
                if i % 2000 == 1999 { try await group.waitForAll() }
            }
            try await group.waitForAll()
        }
        await publisher.close()

        let first = try startConsumer(f, db: db)
        try await eventually("a first part stored") { storedEvents(db) >= 1500 }
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        let storedAtKill = storedEvents(db)
        #expect(storedAtKill < total, "the kill came too late to be mid-run")

        let second = try startConsumer(f, db: db)
        defer { if second.isRunning { kill(second.processIdentifier, SIGKILL) } }
        try await eventually("everything stored", timeout: .seconds(90)) { storedEvents(db) >= total }
        try await eventually("the queue drained") { try f.messageCount(f.topology.eventsQueue) == 0 }
        kill(second.processIdentifier, SIGTERM)
        second.waitUntilExit()
        #expect(second.terminationStatus == 0)
        let funnel = try FunnelQuery.run(path: db, scope: .all)
        #expect(funnel.unlinkedEvents == total)
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0)
    }
}
