import Testing
@testable import PushCore

/// Reading the contracts: required fields named, wrong kinds refused, unknown fields ignored.
@Suite(.timeLimit(.minutes(1))) struct ContractDecodingTests {
    func issues(_ json: String) -> [ContractIssue] {
        do {
            _ = try SendJob.decode(Array(json.utf8))
            return []
        } catch {
            return error.issues
        }
    }

    @Test func missingRequiredFieldsAreAllNamed() {
        let found = issues(#"{"recipients":[{"token":"t"}]}"#)
        #expect(found.map(\.field) == ["job_id", "app_id"])
        #expect(found.allSatisfy { $0.code == .missingField })
    }

    @Test func notJSONIsReportedAsSuch() {
        #expect(issues("not json").map(\.code) == [.notJSON])
        #expect(issues("[1]").map(\.code) == [.wrongType])
    }

    @Test func numericDataValuesAreRefusedNotStringified() {
        let found = issues(#"{"job_id":"j","app_id":"a","data":{"n":1},"recipients":[{"token":"t"}]}"#)
        #expect(found.map(\.code) == [.dataValueNotString])
        #expect(found.first?.field == "data.n")
    }

    @Test func unknownFieldsAreIgnored() throws {
        let job = try SendJob.decode(Array(#"{"job_id":"j","app_id":"a","recipients":[{"token":"t","extra":1}],"future_field":{"x":1}}"#.utf8))
        #expect(job.jobID == "j")
    }

    @Test func newerSchemaVersionIsRefusedByName() {
        #expect(issues(#"{"schema_version":2,"job_id":"j","app_id":"a","topic":"x"}"#).map(\.code) == [.unsupportedVersion])
        #expect(issues(#"{"schema_version":1,"job_id":"j","app_id":"a","topic":"x"}"#).isEmpty)
    }

    @Test func targetMustBeExactlyOne() {
        #expect(issues(#"{"job_id":"j","app_id":"a"}"#).map(\.code) == [.targetCount])
        #expect(issues(#"{"job_id":"j","app_id":"a","topic":"x","recipients":[{"token":"t"}]}"#).map(\.code) == [.targetCount])
        #expect(issues(#"{"job_id":"j","app_id":"a","recipients":[]}"#).map(\.code) == [.targetCount])
    }

    @Test func recipientProblemsNameTheirIndex() {
        let found = issues(#"{"job_id":"j","app_id":"a","recipients":[{"token":"t"},{"tok":"x"},{"token":"u","mn_message_id":"bad"}]}"#)
        #expect(found.map(\.field) == ["recipients[1].token", "recipients[2].mn_message_id"])
    }

    @Test func jobIDLongerThan128IsRefused() {
        let long = String(repeating: "j", count: 129)
        #expect(issues(#"{"job_id":"\#(long)","app_id":"a","topic":"x"}"#).map(\.field) == ["job_id"])
    }

    @Test func tooManyRecipientsIsRefused() {
        let list = Array(repeating: #"{"token":"t"}"#, count: SendJob.maxRecipients + 1).joined(separator: ",")
        #expect(issues(#"{"job_id":"j","app_id":"a","recipients":[\#(list)]}"#).map(\.code) == [.tooManyRecipients])
    }

    @Test func notAfterAndMessageTypeAreRead() throws {
        let job = try SendJob.decode(Array(#"{"job_id":"j","app_id":"a","topic":"x","message_type":"data","not_after":"2026-12-01T10:00:00Z","campaign":"C"}"#.utf8))
        #expect(job.messageType == .data)
        #expect(job.notAfter?.description == "2026-12-01T10:00:00Z")
        #expect(job.campaign == "C")
        #expect(issues(#"{"job_id":"j","app_id":"a","topic":"x","message_type":"silent"}"#).map(\.code) == [.invalidValue])
        #expect(issues(#"{"job_id":"j","app_id":"a","topic":"x","not_after":"tomorrow"}"#).map(\.code) == [.invalidValue])
    }

    @Test func jobRoundTripsThroughItsEncoding() throws {
        let text = #"{"job_id":"j","app_id":"a","message_type":"notification","notification":{"title":"T","body":"B","image":"https://i/x.png"},"data":{"k":"v"},"recipients":[{"token":"t","data":{"r":"1"}}],"options":{"android":{"priority":"high"}},"validate_only":true,"not_after":"2026-12-01T10:00:00Z","campaign":"C"}"#
        let job = try SendJob.decode(Array(text.utf8))
        #expect(try SendJob.decode(job.encoded()) == job)
    }

    @Test func appFileIsReadWithEveryProblemNamed() throws {
        let registry = try AppRegistry.decode(Array("""
        {"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"/s.json","default_message_type":"data",
          "default_payload":{"pushdata.source":"crm"},"extra_options":{"android":{"priority":"high","ttl":"86400s"}}}]}
        """.utf8))
        #expect(registry["shop-android"]?.defaultMessageType == .data)
        #expect(registry["shop-android"]?.extraOptions["android"]?["ttl"] == "86400s")

        do {
            _ = try AppRegistry.decode(Array("""
            {"apps":[{"app_id":"a","credentials_file":"/s.json","extra_options":{"android":{"ttl":"1 day","priorty":"high"},"ios":{}}},
                     {"app_id":"a","project_id":"p","credentials_file":"/s.json","default_payload":{"from":"x"}}]}
            """.utf8))
            Issue.record("expected the file to be refused")
        } catch {
            #expect(Set(error.issues.map(\.field)) == ["apps[0].project_id", "apps[0].extra_options.ios", "apps[0].extra_options.android.priorty",
                                                        "apps[0].extra_options.android.ttl", "apps[1].app_id", "apps[1].default_payload.from"])
        }
    }

    @Test func eventIsValidated() throws {
        let event = try PushEvent.decode(["event_type": "click", "mn_message_id": "mnid2m.1.2.3.4.5", "app_id": "a"])
        #expect(event.eventType == .click)
        func issues(_ json: JSONValue) -> [String] {
            do {
                _ = try PushEvent.decode(json)
                return ["accepted"]
            } catch {
                #expect(error.document == "event")
                return error.issues.map { "\($0.field) \($0.code)" }
            }
        }
        #expect(issues(["event_type": "swipe", "mn_message_id": "mnid2m.1.2.3.4.5"]) == ["event_type INVALID_VALUE"])
        #expect(issues(["event_type": "open", "mn_message_id": "abc"]) == ["mn_message_id MN_MESSAGE_ID"])
        #expect(issues(["mn_message_id": "mnid2m.1.2.3.4.5"]) == ["event_type MISSING_FIELD"])
        #expect(issues(["event_type": 3, "mn_message_id": "mnid2m.1.2.3.4.5", "occurred_at": "yesterday"])
                == ["event_type WRONG_TYPE", "occurred_at INVALID_VALUE"])
    }

    @Test func resultRoundTripsAndRoutesByAppAndOutcome() throws {
        let result = SendResult(jobID: "j", appID: "shop", mnMessageID: "mnid2m.1.2.3.4.5", campaign: "C", target: ("token", "t"),
                                outcome: .invalidToken, error: ResultError(code: "UNREGISTERED", httpStatus: 404, message: "gone"),
                                attempts: 2, completedAt: Timestamp(secondsSince1970: 1_800_000_000))
        #expect(result.routingKey == "shop.invalid_token")
        #expect(try SendResult.decode(JSONValue.parse(result.encoded().encodedBytes())) == result)
    }
}
