import Testing
@testable import PushCore

/// Merge precedence, deep merge of options and the tracking id.
@Suite(.timeLimit(.minutes(1))) struct CompositionTests {
    @Test func dataPrecedenceIsAppThenJobThenRecipientThenTracking() throws {
        var app = Fixtures.app
        app.defaultPayload = ["k": "app", "app_only": "1", "mn_message_id": "from-app"]
        let job = try Fixtures.job("""
        {"job_id":"j","app_id":"a","notification":{"title":"T"},"data":{"k":"job","job_only":"2","mn_message_id":"from-job"},
         "recipients":[{"token":"t1","data":{"k":"recipient","mn_message_id":"from-recipient"}},{"token":"t2"}]}
        """)
        let messages = try Fixtures.messages(job, app: app)
        #expect(messages[0].message["data"] == ["k": "recipient", "app_only": "1", "job_only": "2",
                                                "mn_message_id": .string(MessageID.generate(jobID: "j", index: 0))])
        #expect(messages[1].message["data"]?["k"] == "job")
    }

    @Test func jobOptionsDeepMergeOverAppExtraOptions() throws {
        var app = Fixtures.app
        app.extraOptions = ["android": ["priority": "high", "notification": ["channel_id": "promo", "color": "#ff0000"]],
                            "webpush": ["headers": ["Urgency": "high"]]]
        let job = try Fixtures.job("""
        {"job_id":"j","app_id":"a","notification":{"title":"T"},"recipients":[{"token":"t"}],
         "options":{"android":{"notification":{"color":"#00ff00"},"ttl":"60s"},"apns":{"headers":{"apns-collapse-id":"c"}}}}
        """)
        let message = try #require(Fixtures.messages(job, app: app).first).message
        #expect(message["android"] == ["priority": "high", "ttl": "60s", "notification": ["channel_id": "promo", "color": "#00ff00"]])
        #expect(message["webpush"] == ["headers": ["Urgency": "high"]])
        #expect(message["apns"] == ["headers": ["apns-collapse-id": "c"]])
        #expect(message["fcm_options"] == nil)
    }

    @Test func deepMergeReplacesNonObjectsAndKeepsUntouchedMembers() {
        let base: JSONValue = ["a": ["x": 1, "y": [1, 2]], "b": "keep"]
        let merged = base.deepMerged(with: ["a": ["y": [3], "z": true]])
        #expect(merged == ["a": ["x": 1, "y": [3], "z": true], "b": "keep"])
    }

    @Test func generatedMessageIDIsDeterministicWellFormedAndDistinctPerRecipient() {
        let first = MessageID.generate(jobID: "job-42", index: 0)
        #expect(first == MessageID.generate(jobID: "job-42", index: 0))
        #expect(first != MessageID.generate(jobID: "job-42", index: 1))
        #expect(first != MessageID.generate(jobID: "job-43", index: 0))
        #expect(MessageID.isWellFormed(first))
        #expect(first.hasSuffix(".1"))
    }

    @Test func givenMessageIDsAreKeptForRecipientsAndSingleTargets() throws {
        let job = try Fixtures.job("""
        {"job_id":"j","app_id":"a","notification":{"title":"T"},"recipients":[{"token":"t1","mn_message_id":"mnid2m.1.2.3.4.5"},{"token":"t2"}]}
        """)
        let ids = try Fixtures.messages(job).map(\.mnMessageID)
        #expect(ids == ["mnid2m.1.2.3.4.5", MessageID.generate(jobID: "j", index: 1)])
        let topic = try Fixtures.job(#"{"job_id":"j","app_id":"a","notification":{"title":"T"},"topic":"news","mn_message_id":"mnid2m.9.9.9.9.9"}"#)
        #expect(try Fixtures.messages(topic).map(\.mnMessageID) == ["mnid2m.9.9.9.9.9"])
    }

    @Test func messageIDShapeIsChecked() {
        #expect(MessageID.isWellFormed("mnid2m.1234.12.12.1.2"))
        #expect(!MessageID.isWellFormed("mnid2m.1234.12.12.1"))
        #expect(!MessageID.isWellFormed("mnid2m.1234.12.12.1.2.3"))
        #expect(!MessageID.isWellFormed("mnid2m.12a4.12.12.1.2"))
        #expect(!MessageID.isWellFormed("xnid2m.1.2.3.4.5"))
        #expect(!MessageID.isWellFormed("mnid2m..2.3.4.5"))
    }

    @Test func retryCopyKeepsOnlyFailedRecipientsWithTheirOriginalIDs() throws {
        let job = try Fixtures.job(#"{"job_id":"j","app_id":"a","notification":{"title":"T"},"recipients":[{"token":"a"},{"token":"b"},{"token":"c"}]}"#)
        let retry = job.keepingRecipients(at: [2])
        let decoded = try SendJob.decode(retry.encoded())
        #expect(decoded == retry)
        #expect(try Fixtures.messages(decoded).map(\.mnMessageID) == [MessageID.generate(jobID: "j", index: 2)])
    }

    @Test func topicAndConditionJobsComposeOneMessage() throws {
        let topic = try Fixtures.job(#"{"job_id":"j","app_id":"a","notification":{"title":"T"},"topic":"news"}"#)
        #expect(try Fixtures.messages(topic).map { $0.message["topic"] } == ["news"])
        let cond = try Fixtures.job(#"{"job_id":"j","app_id":"a","notification":{"title":"T"},"condition":"'a' in topics && 'b' in topics"}"#)
        #expect(try Fixtures.messages(cond).first?.message["condition"] == "'a' in topics && 'b' in topics")
    }

    @Test func oneInvalidRecipientDoesNotSpoilTheOthers() throws {
        let job = try Fixtures.job(#"{"job_id":"j","app_id":"a","notification":{"title":"T"},"recipients":[{"token":"ok"},{"token":"x","data":{"from":"me"}}]}"#)
        let outcomes = try MessageComposer().compose(job, app: Fixtures.app)
        guard case .message = outcomes[0], case .invalid(let index, _, let issues) = outcomes[1] else {
            Issue.record("unexpected outcomes \(outcomes)")
            return
        }
        #expect(index == 1)
        #expect(issues.map(\.code) == [.reservedDataKey])
    }
}
