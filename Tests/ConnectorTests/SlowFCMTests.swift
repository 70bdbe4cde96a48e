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

    /// Second audit, finding 6: FCM took the first attempt and answered too late; the retry went
    /// through. The device may have the push twice: the `sent` result says so
    /// (`possibly_duplicate`), as does nothing else (a job sent at its first try is not marked).
    @Test func aSendAfterATimeoutAfterTheRequestWasSentWholeIsMarkedPossiblyDuplicate() async throws {
        let fixture = try await PipelineFixture(retryTiers: [1])
        let worker = try fixture.makeWorker(maxAttempts: 3) { fcm in
            fcm.transport.requestTimeout = .seconds(2)
        }
        try await fixture.publish([jobJSON("twice", tokens: ["slowonce5000-device"]), jobJSON("once", tokens: ["plain-device"])])
        let (shutdown, task) = fixture.startWorker(worker)
        let results = try await fixture.results(2, timeout: .seconds(30))
        shutdown.trigger()
        await task.value

        let twice = try #require(results.first { $0.jobID == "twice" })
        #expect(twice.outcome == .sent && twice.attempts == 2 && twice.possiblyDuplicate && !twice.possiblyDelivered, "\(twice)")
        #expect(String(decoding: twice.encodedBytes(), as: UTF8.self).contains(#""possibly_duplicate":true"#))
        #expect(try SendResult.decode(JSONValue.parse(twice.encodedBytes())) == twice)
        let once = try #require(results.first { $0.jobID == "once" })
        #expect(once.outcome == .sent && !once.possiblyDuplicate, "\(once)")
        try await eventually("both sends of the slow device recorded") {
            fixture.emulator.recordedMessages().filter { $0.token == "slowonce5000-device" }.count >= 2
        }
    }
}
