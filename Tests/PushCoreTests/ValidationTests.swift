import Testing
@testable import PushCore

/// Every FCM limit the validator enforces, each with a failing and a passing case.
@Suite(.timeLimit(.minutes(1))) struct ValidationTests {
    /// A minimal valid token message with `section` set to `value`.
    func message(_ extra: [String: JSONValue]) -> JSONValue {
        var m: [String: JSONValue] = ["token": "tok", "notification": ["title": "T"]]
        for (k, v) in extra { m[k] = v }
        return .object(m)
    }

    @Test func baseMessageIsValid() { #expect(Fixtures.codes(message([:])) == []) }

    @Test func exactlyOneTargetIsRequired() {
        #expect(Fixtures.codes(["notification": ["title": "T"]]) == [.targetCount])
        #expect(Fixtures.codes(message(["topic": "news"])) == [.targetCount])
        #expect(Fixtures.codes(["topic": "news", "notification": ["title": "T"]]) == [])
    }

    @Test func topicNameMustMatchFCMPatternWithoutPrefix() {
        #expect(Fixtures.codes(["topic": "/topics/news"]) == [.topicName])
        #expect(Fixtures.codes(["topic": "news flash"]) == [.topicName])
        #expect(Fixtures.codes(["topic": "News-1_a.b~c%20"]) == [])
    }

    @Test func conditionNeedsTopicsAndAtMostFive() {
        #expect(Fixtures.codes(["condition": "true"]) == [.condition])
        let six = (1...6).map { "'t\($0)' in topics" }.joined(separator: " || ")
        #expect(Fixtures.codes(["condition": .string(six)]) == [.condition])
        let five = (1...5).map { "'t\($0)' in topics" }.joined(separator: " || ")
        #expect(Fixtures.codes(["condition": .string(five)]) == [])
    }

    @Test func tokenMustNotBeEmptyOrContainSpaces() {
        #expect(Fixtures.codes(["token": ""]) == [.invalidToken])
        #expect(Fixtures.codes(["token": "a b"]) == [.invalidToken])
    }

    @Test func dataValuesMustBeStrings() {
        #expect(Fixtures.codes(message(["data": ["n": 1]])) == [.dataValueNotString])
        #expect(Fixtures.codes(message(["data": ["b": true]])) == [.dataValueNotString])
        #expect(Fixtures.codes(message(["data": ["n": "1"]])) == [])
    }

    @Test(arguments: ["from", "message_type", "google.x", "gcm.notification.title", ""])
    func reservedDataKeysAreRefused(key: String) {
        #expect(Fixtures.codes(message(["data": .object([key: "v"])])) == [.reservedDataKey])
        #expect(Fixtures.codes(message(["android": ["data": .object([key: "v"])]])) == [.reservedDataKey])
    }

    @Test func ordinaryDataKeysPass() {
        #expect(Fixtures.codes(message(["data": ["pushdata.from": "v", "fromage": "v", "googler": "v"]])) == [])
    }

    @Test func analyticsLabelMustMatchPatternAndLength() {
        #expect(Fixtures.codes(message(["fcm_options": ["analytics_label": "bad label"]])) == [.analyticsLabel])
        #expect(Fixtures.codes(message(["fcm_options": .object(["analytics_label": .string(String(repeating: "a", count: 51))])])) == [.analyticsLabel])
        #expect(Fixtures.codes(message(["android": ["fcm_options": ["analytics_label": "bad/label"]]])) == [.analyticsLabel])
        #expect(Fixtures.codes(message(["fcm_options": .object(["analytics_label": .string(String(repeating: "a", count: 50))])])) == [])
    }

    @Test(arguments: ["86400", "-1s", "1.5.2s", "2419201s", "abc", "1.1234567890s"])
    func androidTTLOutsideFormatOrRangeIsRefused(ttl: String) {
        #expect(Fixtures.codes(message(["android": ["ttl": .string(ttl)]])) == [.androidTTL])
    }

    @Test(arguments: ["0s", "3.5s", "86400s", "2419200s"])
    func androidTTLInRangeIsAccepted(ttl: String) {
        #expect(Fixtures.codes(message(["android": ["ttl": .string(ttl)]])) == [])
    }

    @Test func androidPriorityIsNormalOrHigh() {
        #expect(Fixtures.codes(message(["android": ["priority": "urgent"]])) == [.androidPriority])
        #expect(Fixtures.codes(message(["android": ["priority": "normal"]])) == [])
        #expect(Fixtures.codes(message(["android": ["priority": "high"]])) == [])
    }

    @Test func webpushLinkMustBeHTTPS() {
        #expect(Fixtures.codes(message(["webpush": ["fcm_options": ["link": "http://example.com"]]])) == [.webpushLink])
        #expect(Fixtures.codes(message(["webpush": ["fcm_options": ["link": "https://example.com/x"]]])) == [])
    }

    @Test func imageURLsMustBeHTTPS() {
        #expect(Fixtures.codes(["token": "t", "notification": ["title": "T", "image": "ftp://x/y.png"]]) == [.imageURL])
        #expect(Fixtures.codes(message(["android": ["notification": ["image": "http://x/y.png"]]])) == [.imageURL])
        #expect(Fixtures.codes(message(["apns": ["fcm_options": ["image": "file:///y.png"]]])) == [.imageURL])
        #expect(Fixtures.codes(["token": "t", "notification": ["title": "T", "image": "https://x/y.png"]]) == [])
    }

    @Test func unknownFieldNamesAreRefusedLikeFCMDoes() {
        let issues = MessageValidator().validate(message: message(["android": ["priorty": "high"]]))
        #expect(issues.map(\.code) == [.unknownField])
        #expect(issues.first?.field == "message.android.priorty")
        #expect(Fixtures.codes(message(["apns": ["payload": ["aps": ["anything": ["goes": 1]]]]])) == [])
    }

    @Test func wrongValueKindsAreNamed() {
        let issues = MessageValidator().validate(message: message(["android": ["direct_boot_ok": "yes"]]))
        #expect(issues.map(\.field) == ["message.android.direct_boot_ok"])
        #expect(issues.map(\.code) == [.wrongType])
    }

    /// A token message whose payload (message without the token) is exactly `size` bytes.
    func messageOfPayloadSize(_ size: Int, target: (String, JSONValue) = ("token", "tok")) -> JSONValue {
        let empty: JSONValue = ["data": ["k": ""]]
        let padding = size - empty.encodedBytes().count
        return .object(["data": .object(["k": .string(String(repeating: "x", count: padding))]), target.0: target.1])
    }

    @Test func payloadOf4096BytesPassesAnd4097IsRefused() {
        #expect(Fixtures.codes(messageOfPayloadSize(4096)) == [])
        #expect(Fixtures.codes(messageOfPayloadSize(4097)) == [.payloadTooLarge])
    }

    @Test func topicPayloadLimitIs2048() {
        #expect(Fixtures.codes(messageOfPayloadSize(2048, target: ("topic", "news"))) == [])
        #expect(Fixtures.codes(messageOfPayloadSize(2049, target: ("topic", "news"))) == [.payloadTooLarge])
    }

    @Test func payloadSizeCountsUTF8Bytes() {
        // "è" is two bytes: 2048 of them are 4096 bytes of value alone.
        let m: JSONValue = ["token": "t", "data": ["k": .string(String(repeating: "è", count: 2048))]]
        #expect(Fixtures.codes(m) == [.payloadTooLarge])
    }

    @Test func composerRefusesOversizedRecipientWithPayloadTooLarge() throws {
        let big = String(repeating: "x", count: 5000)
        let job = try Fixtures.job(#"{"job_id":"j","app_id":"a","notification":{"title":"T"},"recipients":[{"token":"t","data":{"big":"\#(big)"}}]}"#)
        let outcome = try MessageComposer().compose(job, app: Fixtures.app).first
        guard case .invalid(_, _, let issues)? = outcome else { Issue.record("expected invalid"); return }
        #expect(issues.map(\.code) == [.payloadTooLarge])
    }
}
