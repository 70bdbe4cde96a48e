import AMQP
import EmulatorKit
import Foundation
import PushCore
import Testing
@testable import Connector

/// FCM slower than the request timeout: the emulator takes each message and answers too late.
/// The result that gives up must not claim the message was not delivered: it says
/// `possibly_delivered`, and so do the retry copy and the dead letter (issue 32, item 7).
@Suite(.serialized) struct SlowFCMTests {
    @Test func aTimeoutAfterTheRequestWasSentWholeIsMarkedPossiblyDelivered() async throws {
        let fixture = try await PipelineFixture(retryTiers: [1])
        let worker = try fixture.makeWorker(maxAttempts: 2) { fcm in
            fcm.transport.requestTimeout = .seconds(2)
        }
        try await fixture.publish([jobJSON("slow", tokens: ["slow5000-device"])])
        let (shutdown, task) = fixture.startWorker(worker)
        let results = try await fixture.results(1, timeout: .seconds(30))
        let dead = try await fixture.take(1, from: fixture.topology.deadLetterQueue, timeout: .seconds(10))
        shutdown.trigger()
        await task.value

        let result = try #require(results.first)
        #expect(result.outcome == .deadLettered)
        #expect(result.error?.code == "RETRIES_EXHAUSTED")
        #expect(result.possiblyDelivered, "\(result)")
        #expect(result.error?.message.contains("TRANSPORT_TIMEOUT_AFTER_SEND") == true, "\(result.error?.message ?? "")")
        #expect(String(decoding: result.encodedBytes(), as: UTF8.self).contains(#""possibly_delivered":true"#))
        #expect(dead.first?.properties.headers[DeadLetterHeader.possiblyDelivered] == .bool(true))
        // The emulator did take it, on each of the two attempts.
        try await eventually("both attempts recorded") {
            fixture.emulator.recordedMessages().filter { $0.token == "slow5000-device" }.count >= 2
        }
        #expect(fixture.emulator.recordedMessages().filter { $0.token == "slow5000-device" }.count == 2)
    }
}
