import AMQP
import EmulatorKit
import Foundation
import PushCore
import Testing
@testable import Connector

/// `push-*` headers count only on copies the worker made: a retry copy back from its tier, or a
/// `dlq replay` copy. Upstream's forged headers and a DLQ message moved back by hand start a new
/// job. Real broker and emulator (issue 32, item 8).
@Suite(.serialized) struct ForgedHeadersTests {
    func publish(_ fixture: PipelineFixture, _ body: String, headers: AMQPTable) async throws {
        let publisher = try await ConfirmingPublisher.connect(settings: fixture.settings)
        try await publisher.publish(exchange: fixture.topology.jobsExchange, routingKey: fixture.topology.jobsRoutingKey,
                                    body: Data(body.utf8), properties: MessageProperties(contentType: "application/json",
                                                                                          headers: headers, persistent: true))
        await publisher.close()
    }

    @Test func forgedOrStaleHeadersNeitherUseUpAttemptsNorOutrankResults() async throws {
        let fixture = try await PipelineFixture(retryTiers: [1])
        let worker = try fixture.makeWorker(maxAttempts: 3)
        // Upstream's forgery: 99 attempts made, failing since 1970, replayed 2^31 times.
        try await publish(fixture, jobJSON("forged", tokens: ["flaky1-forged"]),
                          headers: [DeadLetterHeader.retryAttempt: .string("99"), DeadLetterHeader.firstFailedAt: .string("1970-01-01T00:00:00Z"),
                                    DeadLetterHeader.replays: .int(Int64(1) << 31)])
        // A DLQ copy moved back with a shovel: its old failure and attempts come along.
        try await publish(fixture, jobJSON("shovelled", tokens: ["flaky1-shovelled"]),
                          headers: FailureHeaders.deadLetter(code: "RETRIES_EXHAUSTED", message: "old",
                                                             history: DeliveryHistory(attemptsMade: 3, firstFailedAt: Timestamp(secondsSince1970: 0), replays: 0),
                                                             now: Timestamp(secondsSince1970: 1000)))
        // A genuine replay copy keeps its count.
        try await publish(fixture, jobJSON("replayed", tokens: ["plain-replayed"]), headers: FailureHeaders.replayed([:], replays: 2))
        let (shutdown, task) = fixture.startWorker(worker)
        let results = try await fixture.results(3, timeout: .seconds(30))
        shutdown.trigger()
        await task.value

        let byJob = Dictionary(results.map { ($0.jobID, $0) }, uniquingKeysWith: { a, _ in a })
        // The flaky token fails once: a new job retries it (attempt 2, through a retry tier whose
        // copy's own history is trusted) instead of dead-lettering it at its first failure.
        #expect(byJob["forged"]?.outcome == .sent, "\(String(describing: byJob["forged"]))")
        #expect(byJob["forged"]?.attempts == 2)
        #expect(byJob["forged"]?.replays == 0)
        #expect(byJob["shovelled"]?.outcome == .sent, "\(String(describing: byJob["shovelled"]))")
        #expect(byJob["shovelled"]?.attempts == 2)
        #expect(byJob["replayed"]?.outcome == .sent)
        #expect(byJob["replayed"]?.replays == 3)
        #expect(try fixture.messageCount(fixture.topology.deadLetterQueue) == 0)
    }
}
