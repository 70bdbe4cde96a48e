import EmulatorKit
import Foundation
import PushCore
import Testing
@testable import Connector

/// A recipient's own problem stays its own: an empty token, a token repeated within the job and a
/// repeated `mn_message_id` each reject that recipient alone, while the rest of the job is sent
/// once per device. Real broker and emulator (issue 32, item 5 and two low items).
@Suite(.serialized) struct RecipientRulesTests {
    @Test func anEmptyOrRepeatedRecipientIsRejectedAloneAndTheOthersAreSentOnce() async throws {
        let fixture = try await PipelineFixture()
        let worker = try fixture.makeWorker()
        let tokens = ["tok-a", "", "tok-b", "tok-a", "tok-c"]
        try await fixture.publish([
            jobJSON("mixed", tokens: tokens),
            #"{"job_id":"ids","app_id":"shop-android","notification":{"title":"T","body":"B"},"recipients":["#
                + #"{"token":"id-1","mn_message_id":"mnid2m.1.1.1.1.1"},{"token":"id-2","mn_message_id":"mnid2m.1.1.1.1.1"},"#
                + #"{"token":"id-3"}]}"#,
        ])
        let (shutdown, task) = fixture.startWorker(worker)
        let results = try await fixture.results(8)
        shutdown.trigger()
        await task.value

        func outcome(_ job: String, _ token: String) -> [String] {
            results.filter { $0.jobID == job && $0.target.value == token }.map { "\($0.outcome.rawValue) \($0.error?.code ?? "")" }
        }
        #expect(outcome("mixed", "tok-a") == ["sent ", "rejected DUPLICATE_TOKEN"])
        #expect(outcome("mixed", "") == ["rejected INVALID_TOKEN"])
        #expect(outcome("mixed", "tok-b") == ["sent "])
        #expect(outcome("mixed", "tok-c") == ["sent "])
        #expect(outcome("ids", "id-1") == ["sent "])
        #expect(outcome("ids", "id-2") == ["rejected DUPLICATE_MESSAGE_ID"])
        #expect(outcome("ids", "id-3") == ["sent "])
        let sent = fixture.emulator.recordedMessages().compactMap(\.token).sorted()
        #expect(sent == ["id-1", "id-3", "tok-a", "tok-b", "tok-c"])
        #expect(try fixture.messageCount(fixture.topology.deadLetterQueue) == 0)
    }
}
