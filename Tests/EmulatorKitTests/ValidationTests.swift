import Foundation
import Testing
@testable import EmulatorKit

/// Each FCM rule, broken once: 400 INVALID_ARGUMENT naming the field.
@Suite(.timeLimit(.minutes(1))) struct ValidationTests {
    static let cases: [(message: String, field: String)] = [
        (#"{"data":{"a":"b"}}"#, "message.token"),
        (#"{"token":"t","topic":"news"}"#, "message.topic"),
        (#"{"topic":"/topics/news"}"#, "message.topic"),
        (#"{"topic":"news!"}"#, "message.topic"),
        (#"{"token":"t","data":{"n":1}}"#, "message.data[n]"),
        (#"{"token":"t","data":{"from":"x"}}"#, "\"from\""),
        (#"{"token":"t","data":{"message_type":"x"}}"#, "\"message_type\""),
        (#"{"token":"t","data":{"google.x":"x"}}"#, "\"google.x\""),
        (#"{"token":"t","data":{"gcm.n":"x"}}"#, "\"gcm.n\""),
        ("{\"token\":\"t\",\"data\":{\"big\":\"\(String(repeating: "x", count: 4100))\"}}", "4096-byte"),
        ("{\"topic\":\"n\",\"data\":{\"big\":\"\(String(repeating: "x", count: 2050))\"}}", "2048-byte"),
        ("{\"condition\":\"'a' in topics\",\"data\":{\"big\":\"\(String(repeating: "x", count: 2050))\"}}", "2048-byte"),
        (#"{"token":"t","fcm_options":{"analytics_label":"bad label"}}"#, "message.fcm_options.analytics_label"),
        ("{\"token\":\"t\",\"fcm_options\":{\"analytics_label\":\"\(String(repeating: "a", count: 51))\"}}", "message.fcm_options.analytics_label"),
        (#"{"token":"t","android":{"ttl":"86400"}}"#, "message.android.ttl"),
        (#"{"token":"t","android":{"ttl":"2419201s"}}"#, "message.android.ttl"),
        (#"{"token":"t","android":{"priority":"urgent"}}"#, "message.android.priority"),
        (#"{"token":"t","android":{"fcm_options":{"analytics_label":"a/b"}}}"#, "message.android.fcm_options.analytics_label"),
        (#"{"token":"t","webpush":{"fcm_options":{"link":"http://x.example"}}}"#, "message.webpush.fcm_options.link"),
        (#"{"token":"t","notification":{"image":"ftp://x/y.png"}}"#, "message.notification.image"),
        (#"{"token":"t","android":{"x":1}}"#, "Unknown name \"x\" at 'message.android'"),
        (#"{"token":"t","notification":{"titel":"x"}}"#, "Unknown name \"titel\" at 'message.notification'"),
        (#"{"token":"t","apns":{"headerz":{}}}"#, "Unknown name \"headerz\" at 'message.apns'"),
        (#"{"token":"t","webpush":{"fcm_options":{"linkk":"https://a"}}}"#, "'message.webpush.fcm_options'"),
        (#"{"token":"t","fcm_options":{"label":"x"}}"#, "'message.fcm_options'"),
        (#"{"token":"t","colour":"red"}"#, "Unknown name \"colour\" at 'message'"),
        (#"{"token":"t","notification":"hello"}"#, "message.notification"),
        (#"{"token":"t","apns":{"headers":{"apns-priority":10}}}"#, "message.apns.headers[apns-priority]"),
    ]

    @Test(arguments: cases)
    func brokenRuleIsRefusedNamingTheField(message: String, field: String) throws {
        try withEmulator { emulator throws in
            let response = try send(emulator, message: message)
            #expect(response.status == 400)
            #expect(response.error["status"] as? String == "INVALID_ARGUMENT")
            #expect(response.error["code"] as? Int == 400)
            #expect(response.errorCode == "INVALID_ARGUMENT")
            let text = try #require(response.error["message"] as? String)
            #expect(text.contains(field), "message \(text) should name \(field)")
            #expect(emulator.recordedMessages().isEmpty)
        }
    }

    @Test func unknownTopLevelFieldAndBrokenJSONAreRefused() throws {
        try withEmulator { emulator throws in
            let url = emulator.baseURL + "/v1/projects/p/messages:send"
            let unknown = try Curl.run("POST", url, body: #"{"message":{"token":"t"},"dry_run":true}"#)
            #expect(unknown.status == 400)
            #expect((unknown.error["message"] as? String)?.contains("Unknown name \"dry_run\"") == true)
            let broken = try Curl.run("POST", url, body: #"{"message":{"token":"t"}"#)
            #expect(broken.status == 400)
            #expect(broken.errorCode == "INVALID_ARGUMENT")
        }
    }

    @Test func acceptsWhatFCMAccepts() throws {
        let messages = [
            #"{"token":"t","android":{"ttl":"3.5s","priority":"high","notification":{"image":"https://a.example/i.png","channelId":"c"}},"fcmOptions":{"analyticsLabel":"promo_1"}}"#,
            #"{"condition":"'a' in topics && 'b' in topics","apns":{"headers":{"apns-priority":"5"},"payload":{"aps":{"content-available":1}}}}"#,
            #"{"topic":"news~%._-","webpush":{"fcm_options":{"link":"https://example.com/x"},"notification":{"anything":1}}}"#,
            "{\"token\":\"t\",\"data\":{\"big\":\"\(String(repeating: "x", count: 4000))\"}}",
        ]
        try withEmulator { emulator throws in
            for message in messages {
                let response = try send(emulator, message: message)
                #expect(response.status == 200, "\(message): \(response.body)")
            }
        }
    }

    @Test func payloadSizeExcludesTheTargetKey() throws {
        // {"data":{"k":"xxx…"}} is exactly 4096 bytes when the value has 4096 - 15 characters.
        let value = String(repeating: "x", count: 4096 - #"{"data":{"k":""}}"#.utf8.count)
        let atLimit = "{\"token\":\"\(String(repeating: "t", count: 200))\",\"data\":{\"k\":\"\(value)\"}}"
        let overLimit = "{\"token\":\"t\",\"data\":{\"k\":\"\(value)x\"}}"
        try withEmulator { emulator throws in
            #expect(try send(emulator, message: atLimit).status == 200)
            #expect(try send(emulator, message: overLimit).status == 400)
        }
    }
}
