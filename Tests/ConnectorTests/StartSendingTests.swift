import Foundation
import PushCore
@testable import PushWorker
import Synchronization
import Testing
@testable import Connector

/// `JobProcessor.startSending`, the worker's path for every job: the sends are started from
/// callbacks and what they gave handed to `conclude`, with the same send window, lane give-up and
/// plan as `process` (real emulator, real FCM client, no broker).
@Suite(.timeLimit(.minutes(1))) struct StartSendingTests {
    typealias Setup = StreamedJobTests.Setup

    /// A job admitted and handed to `startSending`, and its `SentJob` once sent.
    final class Started: Sendable {
        private let state = Mutex<(job: AdmittedJob?, sent: SentJob?)>((nil, nil))
        var job: AdmittedJob? { state.withLock { $0.job } }
        var sent: SentJob? { state.withLock { $0.sent } }

        init(_ processor: JobProcessor, _ body: Data, lane: LaneThread = .anywhere) {
            processor.admit(processor.intake(body: body, headers: [:])) { job in
                self.state.withLock { $0.job = job }
                processor.startSending(job, on: lane) { result in self.state.withLock { $0.sent = result } }
            }
        }

        func waitForSent(seconds: Int = 10) async throws -> SentJob {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline {
                if let sent { return sent }
                try await Task.sleep(for: .milliseconds(5))
            }
            throw FixtureError("the send did not come back within \(seconds) s")
        }
    }

    @Test func aJobOfOneTargetIsSentAndConcludedAsProcessWouldPlanIt() async throws {
        let setup = try Setup(window: 4, admission: 8)
        let processor = setup.processor
        let one = Started(processor, StreamedJobTests.job(recipients: 1, id: "one"))
        let job = try #require(one.job)
        let processed = processor.conclude(job, try await one.waitForSent())
        let results = try processed.messages.filter { $0.kind == .result }.map { try SendResult.decode(JSONValue.parse($0.body)) }
        #expect(results.map(\.outcome) == [.sent] && results.first?.jobID == "one")
        #expect(processed.messages.count == 1, "a sent job is its one result")
        #expect(setup.emulator.recordedMessages().compactMap(\.token) == ["dev-0"])
        #expect(processor.sendWindow?.available == 4, "the window permit came back with the answer")
        #expect(processor.jobAdmission?.available == 7, "the admission stays taken until release")
        processor.release(job)
        #expect(processor.jobAdmission?.available == 8)
    }

    /// Ten targets through a window of four: each waits for its permit as a callback, freed by
    /// an answer; all ten are sent, never more than four composed and unsent, and the plan is
    /// the one `process` makes.
    @Test func aJobOfSeveralTargetsIsSentThroughTheWindowWithoutATask() async throws {
        let setup = try Setup(window: 4, latency: .fixed(.milliseconds(20)))
        let processor = setup.processor
        let ten = Started(processor, StreamedJobTests.job(recipients: 10, id: "ten"))
        let processed = processor.conclude(try #require(ten.job), try await ten.waitForSent())
        let results = try processed.messages.filter { $0.kind == .result }.map { try SendResult.decode(JSONValue.parse($0.body)) }
        #expect(results.count == 10 && results.allSatisfy { $0.outcome == .sent })
        #expect(Set(setup.emulator.recordedMessages().compactMap(\.token)) == Set((0..<10).map { "dev-\($0)" }))
        #expect((1...4).contains(processor.unsentGauge?.highest ?? -1), "within the window: \(processor.unsentGauge?.highest ?? -1)")
        #expect(processor.sendWindow?.available == 4)
    }

    /// With the window full, a job of one target waits as a callback, composed only when the
    /// answer that frees the window arrives: never more composed and unsent than the window.
    @Test func aJobWaitingForTheWindowIsComposedAndSentByTheAnswerThatFreesIt() async throws {
        let setup = try Setup(window: 1, latency: .fixed(.milliseconds(200)))
        let processor = setup.processor
        let first = Started(processor, StreamedJobTests.job(recipients: 1, id: "first"))
        let second = Started(processor, StreamedJobTests.job(recipients: 1, id: "second"))
        #expect(processor.sendWindow?.queued == 1, "the second job waits for the window")
        for started in [first, second] {
            let sent = try await started.waitForSent()
            #expect(processor.conclude(try #require(started.job), sent).messages.count == 1)
        }
        #expect(setup.emulator.recordedMessages().compactMap(\.token) == ["dev-0", "dev-0"])
        #expect(processor.unsentGauge?.highest == 1, "one composed and unsent at a time, got \(processor.unsentGauge?.highest ?? -1)")
        #expect(processor.sendWindow?.available == 1)
    }

    @Test func aLaneThatGaveUpSendsNothingAndConcludesWithNoMessages() async throws {
        let setup = try Setup(window: 2)
        let processor = setup.processor
        let gone = Started(processor, StreamedJobTests.job(recipients: 1, id: "gone"),
                           lane: .anywhere(givingUpWhen: { true }))
        #expect(processor.conclude(try #require(gone.job), try await gone.waitForSent()).messages.isEmpty)
        #expect(setup.emulator.recordedMessages().isEmpty && processor.sendWindow?.available == 2)
    }
}
