import AMQP
@testable import EventStorage
import Foundation
import PushCore
import Testing
@testable import Connector

/// `push-connector events dlq …`: the jobs DLQ's six commands on the events DLQ. Events the store
/// once refused are counted, listed, exported, imported, replayed to the queue they came from
/// and stored by the events consumer; invalid ones can be purged. Real broker and consumer
/// process (issue 32, item 2).
@Suite(.serialized, .timeLimit(.minutes(3))) struct EventsDlqTests {
    /// An events DLQ copy as the consumer writes it (`FailureHeaders.eventDeadLetter`).
    func deadEvent(_ f: PipelineFixture, _ body: String, code: String) -> (body: Data, properties: MessageProperties) {
        (Data(body.utf8), MessageProperties(contentType: "application/json",
                                            headers: FailureHeaders.eventDeadLetter(["trace-id": "t"], code: code, message: "test",
                                                                                   sourceQueue: f.topology.eventsQueue),
                                            persistent: true))
    }

    @Test func eventsTheStoreRefusedAreBroughtBackAndStored() async throws {
        let f = try await PipelineFixture()
        let stored = (0..<5).map { eventJSON("click", "mnid2m.5.\($0).1.1.1", extra: #","event_id":"back-\#($0)""#) }
        let client = try AMQPChannelClient(settings: f.settings)
        for m in stored.map({ deadEvent(f, $0, code: "STORE_FAILED") }) + [deadEvent(f, "{not json", code: "INVALID_EVENT")] {
            try client.publishConfirmed(exchange: "", routingKey: f.topology.eventsDeadLetterQueue, body: m.body,
                                        properties: m.properties, mandatory: true)
        }
        client.close()

        var (code, out, err) = await runCLI(["events", "dlq", "stats", "--json"] + f.cliBroker)
        #expect(code == 0, "\(err)")
        #expect(out.contains(#""total":6"#) && out.contains(#""STORE_FAILED":5"#) && out.contains(f.topology.eventsDeadLetterQueue), "\(out)")
        (code, out, err) = await runCLI(["events", "dlq", "list"] + f.cliBroker)
        #expect(code == 0 && out.contains("6 shown, 6 matching, 6 in \(f.topology.eventsDeadLetterQueue)"), "\(out)\(err)")
        let file = try temporaryDirectory() + "/events-dlq.jsonl"
        (code, out, err) = await runCLI(["events", "dlq", "export", file] + f.cliBroker)
        #expect(code == 0 && out.hasPrefix("exported 6 of 6"), "\(out)\(err)")
        (code, out, err) = await runCLI(["events", "dlq", "purge", "--yes", "--code", "INVALID_EVENT"] + f.cliBroker)
        #expect(code == 0 && out.hasPrefix("deleted 1 message(s)"), "\(out)\(err)")
        (code, out, err) = await runCLI(["events", "dlq", "replay"] + f.cliBroker)
        #expect(code == 0 && out.hasPrefix("replayed 5 message(s)"), "\(out)\(err)")
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0)
        #expect(try f.messageCount(f.topology.eventsQueue) == 5, "replayed to the queue they came from")
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 0, "the jobs DLQ is not touched")

        let db = f.directory + "/events.db"
        let consumer = try f.startEventsConsumer(db: db)
        defer { if consumer.isRunning { kill(consumer.processIdentifier, SIGKILL) } }
        try await eventually("the replayed events stored") { ((try? FunnelQuery.run(path: db, scope: .all).unlinkedEvents) ?? 0) >= 5 }
        kill(consumer.processIdentifier, SIGTERM)
        consumer.waitUntilExit()
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 0)

        // The export brings all six back into the events DLQ.
        (code, out, err) = await runCLI(["events", "dlq", "import", file] + f.cliBroker)
        #expect(code == 0 && out.contains("imported 6 message(s) into \(f.topology.eventsDeadLetterQueue)"), "\(out)\(err)")
        #expect(try f.messageCount(f.topology.eventsDeadLetterQueue) == 6)
    }
}
