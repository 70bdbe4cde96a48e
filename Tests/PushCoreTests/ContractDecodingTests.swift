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

    @Test func aDayTheMonthHasNotOrALeapSecondIsRefusedNotRolledOver() throws {
        #expect(Timestamp(rfc3339: "2026-02-30T00:00:00Z") == nil)
        #expect(Timestamp(rfc3339: "2026-02-29T00:00:00Z") == nil)
        #expect(Timestamp(rfc3339: "2026-04-31T00:00:00Z") == nil)
        #expect(Timestamp(rfc3339: "2026-12-31T23:59:60Z") == nil)
        #expect(Timestamp(rfc3339: "2024-02-29T00:00:00Z")?.description == "2024-02-29T00:00:00Z")
        #expect(Timestamp(rfc3339: "2000-02-29T12:00:00Z") != nil)
        #expect(Timestamp(rfc3339: "1900-02-29T12:00:00Z") == nil)
        #expect(Timestamp(rfc3339: "2026-01-31T23:59:59Z") != nil)
        let job = #"{"job_id":"d","app_id":"a","not_after":"2026-02-30T00:00:00Z","notification":{"title":"T"},"recipients":[{"token":"t"}]}"#
        #expect(throws: ContractError.self) { try SendJob.decode(Array(job.utf8)) }
    }

    @Test func aDocumentWithAKeyTwiceIsRefusedByEveryReader() throws {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(#"{"a":1,"b":{"c":1,"c":2}}"#.utf8)) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(#"{"a":1,"a":1}"#.utf8)) }
        #expect(try JSONValue.parse(Array(#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#.utf8)) != .null, "the same key in different objects")
        let twice = #"{"job_id":"d","app_id":"edge","app_id":"other","notification":{"title":"T"},"recipients":[{"token":"t"}]}"#
        #expect(throws: ContractError.self) { try SendJob.decode(Array(twice.utf8)) }
        let inData = #"{"job_id":"d","app_id":"edge","data":{"k":"1","k":"2"},"recipients":[{"token":"t"}]}"#
        #expect(throws: ContractError.self) { try SendJob.decode(Array(inData.utf8)) }
        let inEvent = #"{"event_type":"open","event_type":"click","mn_message_id":"mnid2m.1.1.1.1.1"}"#
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(inEvent.utf8)) }
    }

    @Test func anEventAppIDFollowsTheJobsAppIDRule() throws {
        func event(_ app: String) -> [UInt8] {
            Array(#"{"event_type":"open","mn_message_id":"mnid2m.1.1.1.1.1","app_id":"\#(app)"}"#.utf8)
        }
        #expect(throws: ContractError.self) { try PushEvent.decode(JSONValue.parse(event("shop\\u0000android"))) }
        #expect(throws: ContractError.self) { try PushEvent.decode(JSONValue.parse(event("shop.android"))) }
        #expect(try PushEvent.decode(JSONValue.parse(event("shop-android"))).appID == "shop-android")
    }

    /// `"priority"`: normal when absent, read the same by the scanner and the tree decoder,
    /// anything else than normal or high refused by name, written back only when high.
    @Test func priorityIsNormalUnlessHighAndTravelsWithTheJob() throws {
        let high = #"{"job_id":"j","app_id":"a","priority":"high","recipients":[{"token":"t"}]}"#
        #expect(try SendJob.decode(Array(high.utf8)).priority == .high)
        #expect(SendJobScanner.scan(Array(high.utf8))?.priority == .high)
        #expect(try SendJob.decodeThroughTree(Array(high.utf8)).priority == .high)
        let plain = #"{"job_id":"j","app_id":"a","recipients":[{"token":"t"}]}"#
        #expect(try SendJob.decode(Array(plain.utf8)).priority == .normal)
        #expect(issues(#"{"job_id":"j","app_id":"a","priority":"urgent","recipients":[{"token":"t"}]}"#).map(\.description)
            == [#"priority: must be "normal" or "high", got "urgent" [INVALID_VALUE]"#])
        let reencoded = try SendJob.decode(SendJob.decode(Array(high.utf8)).encoded().encodedBytes())
        #expect(reencoded.priority == .high)
        #expect(try SendJob.decode(Array(plain.utf8)).encoded()["priority"] == nil)
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
                                                        "apps[0].extra_options.android.ttl", "apps[1].app_id", "apps[1].project_id",
                                                        "apps[1].default_payload.from"])
        }
    }

    private func appFile(appID: String, projectID: String = "shop-prod") -> [UInt8] {
        let app = JSONValue.object(["app_id": .string(appID), "project_id": .string(projectID), "credentials_file": "/s.json"])
        return Array(JSONValue.object(["apps": .array([app])]).encodedString().utf8)
    }

    @Test(arguments: ["com.shop.android", "shop*", "shop#", "shop android", "shop\tandroid", "shop\u{00A0}x", "shop\u{7}", ".",
                      "shop\u{7F}", "shop\u{85}x", "shop\u{2028}x", "\u{20}"])
    func appIDsThatBreakRoutingKeysAreRefusedAtLoadAndInJobs(appID: String) throws {
        do {
            _ = try AppRegistry.decode(appFile(appID: appID))
            Issue.record("accepted app_id \(appID)")
        } catch {
            #expect(error.issues.map(\.field) == ["apps[0].app_id"])
            #expect(error.issues.map(\.code) == [.appID])
        }
        let job = JSONValue.object(["job_id": "j", "app_id": .string(appID), "topic": "news", "notification": .object(["title": "T"])])
        do {
            _ = try SendJob.decode(job)
            Issue.record("accepted a job for app_id \(appID)")
        } catch {
            #expect(error.issues.map(\.field) == ["app_id"])
            #expect(error.issues.map(\.code) == [.appID])
        }
    }

    @Test func aDottedAppIDIsExplainedWithASuggestion() {
        #expect(IdentifierRules.appIDProblem("com.shop.android")?.contains("\"com-shop-android\"") == true)
        #expect(IdentifierRules.appIDProblem("com.shop.android")?.contains("routing keys") == true)
    }

    @Test(arguments: ["shop-android", "a", "shop_ios", "Shop-Web-2", "app:x", "ünï-app"])
    func ordinaryAppIDsStayValid(appID: String) throws {
        #expect(IdentifierRules.appIDProblem(appID) == nil)
        #expect(try AppRegistry.decode(appFile(appID: appID))[appID] != nil)
    }

    @Test(arguments: ["shop-prod", "abcdef", "a23456789012345678901234567890", "my-project-123", "example.com:my-project", "google.com:shop-prod"])
    func googleProjectIDsAreAccepted(projectID: String) throws {
        #expect(IdentifierRules.projectIDProblem(projectID) == nil)
        #expect(try AppRegistry.decode(appFile(appID: "a", projectID: projectID))["a"]?.projectID == projectID)
    }

    @Test(arguments: [
        ("p", "6 to 30"), ("abcde", "6 to 30"), ("a234567890123456789012345678901", "6 to 30"), ("1shop-prod", "start with a lower-case letter"),
        ("-shop-prod", "start with a lower-case letter"), ("Shop-Prod", "start with a lower-case letter"), ("shop-Prod", "only lower-case"),
        ("shop_prod", "only lower-case"), ("shop.prod", "only lower-case"), ("shop-prod-", "end with a hyphen"), ("shop prod", "only lower-case"),
        ("Example.com:shop-prod", "domain prefix"), ("com:shop-prod", "domain prefix"), (":shop-prod", "domain prefix"),
        ("example.com:p", "after the domain prefix"), ("example.com:a:b-c-d-e", "after the domain prefix"),
    ])
    func projectIDsOutsideGooglesFormatAreRefusedAtLoad(projectID: String, reason: String) {
        #expect(IdentifierRules.projectIDProblem(projectID)?.contains(reason) == true, "\(projectID)")
        do {
            _ = try AppRegistry.decode(appFile(appID: "a", projectID: projectID))
            Issue.record("accepted project_id \(projectID)")
        } catch {
            #expect(error.issues.map(\.field) == ["apps[0].project_id"])
            #expect(error.issues.map(\.code) == [.projectID])
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

    @Test func aDeadLetteredResultCarriesItsCodeAndReplaysAndRoutesAsDeadLettered() throws {
        let result = SendResult(jobID: "j", appID: "shop", mnMessageID: "mnid2m.1.2.3.4.5", campaign: nil, target: ("topic", "news"),
                                outcome: .deadLettered, error: ResultError(code: "UNKNOWN_APP", message: "unknown App ID"),
                                attempts: 0, completedAt: Timestamp(secondsSince1970: 1_800_000_000), replays: 2)
        #expect(result.routingKey == "shop.dead_lettered")
        let json = result.encoded()
        #expect(json["outcome"] == "dead_lettered" && json["replays"] == 2 && json["error"]?["code"] == "UNKNOWN_APP")
        #expect(try SendResult.decode(JSONValue.parse(json.encodedBytes())) == result)
        // A result from before `replays` existed reads as never replayed.
        let old = try SendResult.decode(JSONValue.parse(#"{"job_id":"j","app_id":"a","mn_message_id":"m","target":{"token":"t"},"outcome":"sent"}"#))
        #expect(old.replays == 0)
    }

    /// The worker writes results straight to bytes; they must be the contract encoder's bytes
    /// exactly (compact, keys sorted), with and without every optional part and with characters
    /// that need escaping.
    @Test func resultBytesAreTheContractEncodersBytes() {
        let at = Timestamp(secondsSince1970: 1_800_000_000.75)
        let results = [
            SendResult(jobID: "j-1", appID: "shop", mnMessageID: "mnid2m.1.2.3.4.5", campaign: "winter \"sale\"\n", target: ("token", "t/é"),
                       outcome: .sent, fcmMessageName: "projects/p/messages/1", attempts: 1, completedAt: at),
            SendResult(jobID: "j", appID: "shop", mnMessageID: "m", campaign: nil, target: ("topic", "news"), outcome: .invalidToken,
                       error: ResultError(code: "UNREGISTERED", httpStatus: 404, message: "gone\t\u{01}"), attempts: 12,
                       completedAt: Timestamp(secondsSince1970: -5), replays: 1_000_000),
            SendResult(jobID: "j", appID: "a", mnMessageID: "m", campaign: "", target: ("condition", "'a' in topics"),
                       outcome: .deadLettered, error: ResultError(code: "UNKNOWN_APP", message: ""), attempts: 0,
                       completedAt: Timestamp(secondsSince1970: 1e300), replays: 0),
        ]
        for result in results {
            #expect(String(decoding: result.encodedBytes(), as: UTF8.self) == result.encoded().encodedString())
        }
        #expect(String(decoding: results[0].encodedBytes(), as: UTF8.self) == #"{"app_id":"shop","attempts":1,"campaign":"winter \"sale\"\n","#
            + #""completed_at":"2027-01-15T08:00:00Z","fcm_message_name":"projects/p/messages/1","job_id":"j-1","#
            + #""mn_message_id":"mnid2m.1.2.3.4.5","outcome":"sent","replays":0,"schema_version":1,"target":{"token":"t/é"}}"#)
    }

    /// Results carry `schema_version` 1; a reader refuses a newer one by name and reads one
    /// without it (earlier releases) as version 1.
    @Test func resultsCarryTheirSchemaVersionAndANewerOneIsRefused() throws {
        let result = SendResult(jobID: "j", appID: "a", mnMessageID: "m", campaign: nil, target: ("token", "t"), outcome: .sent,
                                attempts: 1, completedAt: Timestamp(secondsSince1970: 0))
        guard case .object(var object) = result.encoded() else { Issue.record("not an object"); return }
        #expect(object["schema_version"] == .int(1))
        object["schema_version"] = nil
        #expect(try SendResult.decode(.object(object)).jobID == "j")
        object["schema_version"] = .int(2)
        #expect { try SendResult.decode(.object(object)) } throws: { error in
            (error as? ContractError)?.issues.contains { $0.field == "schema_version" } == true
        }
    }

    /// The contract's latest-outcome rule: replays first, then completed_at (whole seconds), then
    /// an outcome that reached FCM over dead_lettered.
    @Test func latestOutcomeOrdersByReplaysThenTimeThenNotDeadLettered() {
        func r(_ outcome: SendOutcome, at: Double, replays: Int = 0) -> SendResult {
            SendResult(jobID: "j", appID: "a", mnMessageID: "m", campaign: nil, target: ("token", "t"), outcome: outcome,
                       attempts: 1, completedAt: Timestamp(secondsSince1970: at), replays: replays)
        }
        #expect(r(.sent, at: 100, replays: 1).isLater(than: r(.deadLettered, at: 200)))
        #expect(!r(.deadLettered, at: 200).isLater(than: r(.sent, at: 100, replays: 1)))
        #expect(r(.sent, at: 101).isLater(than: r(.deadLettered, at: 100)))
        #expect(r(.deadLettered, at: 101).isLater(than: r(.sent, at: 100)))
        #expect(r(.sent, at: 100.7).isLater(than: r(.deadLettered, at: 100.2)))
        #expect(!r(.deadLettered, at: 100.7).isLater(than: r(.sent, at: 100.2)))
        #expect(!r(.sent, at: 100).isLater(than: r(.sent, at: 100)))
    }
}
