import AMQP
import Foundation
import PushCore
import Testing
@testable import Connector

/// Retry tiers on the real broker: the worker picks the tier from FCM's Retry-After, and the
/// tier's TTL queue hands the job back to the job queue.
@Suite(.serialized, .timeLimit(.minutes(2))) struct RetryTierIntegrationTests {
    @Test func retryAfterTwoSecondsGoesToTheThreeSecondTierNotTheOneSecondTier() async throws {
        // Tiers 1 s and 3 s; FCM answers 503 with Retry-After: 2 (the fixture's backoff is ≤ 1 s).
        let f = try await PipelineFixture(retryTiers: [1, 3], configureEmulator: { $0.retryAfterSeconds = 2 })
        // Copies of whatever the worker publishes to each tier's routing key.
        let sawOne = try f.declareObserver("1s", exchange: f.topology.retryExchange, routingKey: "1s")
        let sawThree = try f.declareObserver("3s", exchange: f.topology.retryExchange, routingKey: "3s")
        let (shutdown, task) = f.startWorker(try f.makeWorker(maxAttempts: 2))
        try await f.publish([jobJSON("tiered", tokens: ["unavailable-dev"])])

        let copy = try #require(try await f.take(1, from: sawThree).first)
        #expect(copy.properties.headers[DeadLetterHeader.retryAttempt] == .int(1))
        // The tier's TTL queue dead-lettered it back to the job queue: the second attempt ran
        // and, attempts used up, dead-lettered the job.
        let dead = try #require(try await f.take(1, from: f.topology.deadLetterQueue).first)
        shutdown.trigger()
        await task.value
        #expect(dead.properties.headers[DeadLetterHeader.code] == "RETRIES_EXHAUSTED")
        #expect(dead.properties.headers[DeadLetterHeader.attempts] == .int(2))
        #expect(try f.messageCount(sawOne) == 0, "a copy went to the 1 s tier, which is shorter than Retry-After")
        #expect(try f.messageCount(sawThree) == 0, "more than one retry copy")
        #expect(try f.messageCount(f.topology.retryTiers[1].queue) == 0)
    }
}
