import Testing
@testable import PushCore

/// The two message kinds of the seed document, reproduced through the composer.
@Suite(.timeLimit(.minutes(1))) struct SeedExampleTests {
    @Test func notificationPlusDataCarriesNotificationDataAndAppExtraOptions() throws {
        let job = try Fixtures.job("""
        {"job_id":"j-1","app_id":"shop-android","recipients":[{"token":"tok-1","mn_message_id":"mnid2m.1234.12.12.1.2"}],
         "notification":{"title":"Nuova offerta disponibile!","body":"Accedi all’app e scopri i dettagli.","image":"https://example.com/img/promo.png"},
         "data":{"pushdata.promo":"OFFERTA_ESTIVA","pushdata.url":"https://example.com/promo"}}
        """)
        let message = try #require(Fixtures.messages(job).first).message
        let expected: JSONValue = [
            "token": "tok-1",
            "notification": ["title": "Nuova offerta disponibile!", "body": "Accedi all’app e scopri i dettagli.",
                             "image": "https://example.com/img/promo.png"],
            "data": ["mn_message_id": "mnid2m.1234.12.12.1.2", "pushdata.promo": "OFFERTA_ESTIVA",
                     "pushdata.url": "https://example.com/promo", "pushdata.source": "crm"],
            "android": ["priority": "high", "ttl": "86400s"],
            "apns": ["headers": ["apns-priority": "10"]],
            "fcm_options": ["analytics_label": "promo"],
        ]
        #expect(message == expected)
    }

    @Test func dataOnlyCarriesNoNotificationAndABackgroundAPNsSection() throws {
        let job = try Fixtures.job("""
        {"job_id":"j-2","app_id":"shop-android","message_type":"data","recipients":[{"token":"tok-2","mn_message_id":"mnid2m.5678.10.04.3.1"}],
         "data":{"pushdata.action":"refresh_profile","pushdata.user_id":"USR12345"}}
        """)
        let message = try #require(Fixtures.messages(job).first).message
        #expect(message["notification"] == nil)
        #expect(message["data"] == ["mn_message_id": "mnid2m.5678.10.04.3.1", "pushdata.action": "refresh_profile",
                                    "pushdata.user_id": "USR12345", "pushdata.promo": "DEFAULT", "pushdata.source": "crm"])
        // The App ID says apns-priority 10; a background push must be 5.
        #expect(message["apns"] == ["headers": ["apns-priority": "5", "apns-push-type": "background"],
                                    "payload": ["aps": ["content-available": 1]]])
        #expect(message["android"] == ["priority": "high", "ttl": "86400s"])
    }

    @Test func dataOnlyJobWithNotificationFieldsIsRefused() throws {
        let job = try Fixtures.job("""
        {"job_id":"j-3","app_id":"shop-android","message_type":"data","recipients":[{"token":"t"}],"notification":{"title":"x"}}
        """)
        #expect(throws: ContractError.self) { try MessageComposer().compose(job, app: Fixtures.app) }
        #expect(MessageComposer().jobIssues(job, app: Fixtures.app).map(\.code) == [.messageTypeConflict])
    }

    @Test func appDefaultMessageTypeAppliesWhenTheJobSaysNothing() throws {
        var app = Fixtures.app
        app.defaultMessageType = .data
        let job = try Fixtures.job(#"{"job_id":"j","app_id":"shop-android","recipients":[{"token":"t"}]}"#)
        let message = try #require(Fixtures.messages(job, app: app).first).message
        #expect(message["notification"] == nil)
        #expect(message["apns"]?["headers"]?["apns-priority"] == "5")
    }

    @Test func requestBodyWrapsTheMessageAndCarriesValidateOnlyOnlyWhenAsked() throws {
        let plain = try Fixtures.job(#"{"job_id":"j","app_id":"a","recipients":[{"token":"t"}],"notification":{"title":"T"}}"#)
        let body = try JSONValue.parse(#require(Fixtures.messages(plain).first).body)
        #expect(body["validate_only"] == nil)
        #expect(body["message"]?["token"] == "t")
        var dry = plain
        dry.validateOnly = true
        let dryBody = try JSONValue.parse(#require(Fixtures.messages(dry).first).body)
        #expect(dryBody["validate_only"] == true)
    }
}
