import AMQP
import EmulatorKit
import Foundation
import PushCore
import Testing
@testable import Connector

/// The send worker end to end: a real RabbitMQ, the real emulator, the real FCM client.
@Suite(.serialized, .timeLimit(.minutes(3))) struct WorkerIntegrationTests {
    @Test func jobWithThreeRecipientsGivesThreeResults() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        try await f.publish([jobJSON("three", tokens: ["dev-a", "dev-b", "dev-c"], extra: #","campaign":"C1""#)])
        let results = try await f.results(3)
        shutdown.trigger()
        await task.value
        #expect(Set(results.map(\.target.value)) == ["dev-a", "dev-b", "dev-c"])
        #expect(results.allSatisfy { $0.outcome == .sent && $0.jobID == "three" && $0.campaign == "C1" && $0.attempts == 1 })
        #expect(Set(results.map(\.mnMessageID)).count == 3)
        #expect(results.allSatisfy { $0.fcmMessageName?.hasPrefix("projects/\(PipelineFixture.project)/messages/") == true })
        #expect(f.emulator.recordedMessages().count == 3)
    }

    @Test func unregisteredTokenGivesInvalidTokenRoutedForPruning() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        try await f.publish([jobJSON("prune", tokens: ["unregistered-x", "dev-ok"])])
        let results = try await f.results(2)
        shutdown.trigger()
        await task.value
        let invalid = try #require(results.first { $0.target.value == "unregistered-x" })
        #expect(invalid.outcome == .invalidToken)
        #expect(invalid.error?.code == "UNREGISTERED")
        #expect(invalid.error?.httpStatus == 404)
        #expect(results.first { $0.target.value == "dev-ok" }?.outcome == .sent)
    }

    @Test func aNonFcm404IsDeadLetteredAsConfigurationAndPublishesNoInvalidToken() async throws {
        // A wrong --fcm-url path: the emulator answers like Google's front end, an HTML 404.
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker(fcmPath: "/fcm-typo"))
        try await f.publish([jobJSON("wrong-url", tokens: ["unregistered-valid-looking"])])
        let dead = try await f.take(1, from: f.topology.deadLetterQueue)
        let results = try await f.results(1)
        shutdown.trigger()
        await task.value
        let headers = dead[0].properties.headers
        #expect(headers[DeadLetterHeader.code]?.stringValue == "CONFIGURATION_ERROR")
        let message = headers[DeadLetterHeader.message]?.stringValue ?? ""
        #expect(message.contains("UNEXPECTED_RESPONSE") && message.contains("HTTP 404") && message.contains("Error 404 (Not Found)"), "\(message)")
        // The one result says dead_lettered, never invalid_token: no consumer can prune the token.
        #expect(results.map(\.outcome) == [.deadLettered] && results.first?.error?.code == "CONFIGURATION_ERROR")
        #expect(try await f.remainingResults().isEmpty, "one result only")
        #expect(f.emulator.recordedMessages().isEmpty)
    }

    @Test func flakyTokenSucceedsOnTheThirdAttemptThroughTheRetryQueues() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker(maxAttempts: 5))
        try await f.publish([jobJSON("flaky", tokens: ["flaky2-dev", "dev-fine"])])
        let results = try await f.results(2, timeout: .seconds(40))
        shutdown.trigger()
        await task.value
        let flaky = try #require(results.first { $0.target.value == "flaky2-dev" })
        #expect(flaky.outcome == .sent)
        #expect(flaky.attempts == 3)
        #expect(flaky.mnMessageID == MessageID.generate(jobID: "flaky", index: 0))
        #expect(results.first { $0.target.value == "dev-fine" }?.attempts == 1)
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 0)
    }

    @Test func alwaysUnavailableTokenEndsInTheDLQWithRetriesExhausted() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker(maxAttempts: 3))
        try await f.publish([jobJSON("doomed", tokens: ["unavailable-dev", "dev-ok"])])
        let dead = try await f.take(1, from: f.topology.deadLetterQueue, timeout: .seconds(40))
        let results = try await f.results(2)
        shutdown.trigger()
        await task.value
        let headers = dead[0].properties.headers
        #expect(headers[DeadLetterHeader.code]?.stringValue == "RETRIES_EXHAUSTED")
        #expect(headers[DeadLetterHeader.attempts]?.intValue == 3)
        #expect(headers[DeadLetterHeader.message]?.stringValue?.contains("UNAVAILABLE") == true)
        #expect(headers[DeadLetterHeader.firstFailedAt]?.stringValue != nil)
        let job = try SendJob.decode(dead[0].body)
        guard case .recipients(let list) = job.target else { Issue.record("no recipients"); return }
        #expect(list.map(\.token) == ["unavailable-dev"])
        #expect(results.map(\.target.value) == ["dev-ok", "unavailable-dev"])
        #expect(results.map(\.outcome) == [.sent, .deadLettered])
        #expect(results[1].error?.code == "RETRIES_EXHAUSTED" && results[1].attempts == 3)
        #expect(results[1].mnMessageID == MessageID.generate(jobID: "doomed", index: 0))
    }

    @Test func badInputIsDeadLetteredWithItsReasonAndTheWorkerKeepsGoing() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        let garbage = Data([0x00, 0xFF, 0xFE, 0x42, 0x13, 0x37])
        try await f.publishBytes(garbage)
        try await f.publish([#"{"job_id": "broken", "#, #"{"app_id":"shop-android","topic":"news","notification":{"title":"T"}}"#,
                             jobJSON("stranger", tokens: ["dev"], app: "no-such-app"), jobJSON("after", tokens: ["dev-after"])])
        let dead = try await f.take(4, from: f.topology.deadLetterQueue)
        let results = try await f.results(2)
        shutdown.trigger()
        await task.value
        // Concurrent lanes dead-letter in no guaranteed order: find each by its body.
        func find(_ body: Data) -> (code: String?, message: String?) {
            let h = dead.first { $0.body == body }?.properties.headers
            return (h?[DeadLetterHeader.code]?.stringValue, h?[DeadLetterHeader.message]?.stringValue)
        }
        #expect(dead.count == 4)
        #expect(find(garbage).code == "INVALID_JOB")
        let broken = find(Data(#"{"job_id": "broken", "#.utf8))
        #expect(broken.code == "INVALID_JOB" && broken.message?.contains("NOT_JSON") == true)
        let noID = find(Data(#"{"app_id":"shop-android","topic":"news","notification":{"title":"T"}}"#.utf8))
        #expect(noID.code == "INVALID_JOB" && noID.message?.contains("job_id") == true)
        let stranger = find(Data(jobJSON("stranger", tokens: ["dev"], app: "no-such-app").utf8))
        #expect(stranger.code == "UNKNOWN_APP" && stranger.message?.contains("no-such-app") == true)
        // Undecodable bodies have no recipients, so no result; the unknown App ID's one recipient has one.
        #expect(results.map(\.jobID).sorted() == ["after", "stranger"])
        #expect(results.first { $0.jobID == "stranger" }?.outcome == .deadLettered)
        #expect(results.first { $0.jobID == "stranger" }?.error?.code == "UNKNOWN_APP")
    }

    @Test func jobPastNotAfterEndsExpiredWithoutSending() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        try await f.publish([jobJSON("late", tokens: ["dev-late"], extra: #","not_after":"2020-01-01T00:00:00Z""#)])
        let results = try await f.results(1)
        shutdown.trigger()
        await task.value
        #expect(results.map(\.outcome) == [.expired])
        #expect(f.emulator.recordedMessages().isEmpty)
    }

    @Test func brokerConnectionsClosedMidRunLoseNothing() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        try await runThroughACut(f) {
            try f.broker.closeAllConnections(vhost: f.settings.vhost, reason: "test: connection cut mid-run")
        }
    }
}
