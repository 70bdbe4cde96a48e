import Foundation
import Testing
@testable import EmulatorKit

/// FCM's field formats, enums and ranges as the emulator answers them (docs/fcm-fidelity.md):
/// each broken value gets 400 INVALID_ARGUMENT naming its field; the valid value is accepted.
@Suite struct EmulatorFieldRuleTests {
    struct Row: Sendable, CustomStringConvertible {
        let field: String
        let bad: String
        let good: String
        var description: String { field }
    }

    /// `{"token":"t", …}` with `json` (a JSON value) at the dotted `path` inside the message.
    static func message(_ path: String, _ json: String) -> String {
        let keys = path.split(separator: ".").map(String.init)
        var text = json
        for key in keys.reversed() { text = "{\"\(key)\":\(text)}" }
        return "{\"token\":\"t\"," + text.dropFirst()
    }

    static let light = #"{"color":{"red":1,"green":0.5,"blue":0,"alpha":1},"light_on_duration":"0.5s","light_off_duration":"1s"}"#

    static let rows: [Row] = [
        Row(field: "android.ttl", bad: #""-1s""#, good: #""3.5s""#),
        Row(field: "android.priority", bad: #""urgent""#, good: #""high""#),
        Row(field: "android.notification.color", bad: #""red""#, good: ##""#FF00aa""##),
        Row(field: "android.notification.color", bad: ##""#ff00aa80""##, good: ##""#000000""##),
        Row(field: "android.notification.notification_priority", bad: #""high""#, good: #""PRIORITY_HIGH""#),
        Row(field: "android.notification.visibility", bad: #""public""#, good: #""PUBLIC""#),
        Row(field: "android.notification.proxy", bad: #""allow""#, good: #""IF_PRIORITY_LOWERED""#),
        Row(field: "android.notification.event_time", bad: #""2026-11-30 21:00:00""#, good: #""2026-11-30T21:00:00.123456789Z""#),
        Row(field: "android.notification.event_time", bad: #""2026-13-01T00:00:00Z""#, good: #""2026-11-30T21:00:00+01:00""#),
        Row(field: "android.notification.vibrate_timings", bad: #"["0.5s","1"]"#, good: #"["0.5s","1s"]"#),
        Row(field: "android.notification.light_settings", bad: #"{"color":{"red":1},"light_on_duration":"1s"}"#, good: light),
        Row(field: "android.notification.light_settings", bad: #"{"color":{"red":2},"light_on_duration":"1s","light_off_duration":"1s"}"#, good: light),
        Row(field: "android.notification.notification_count", bad: "-1", good: "0"),
        Row(field: "android.notification.body_loc_args", bad: #"["x"]"#, good: #"{"body_loc_key":"K","body_loc_args":["x"]}"#),
        Row(field: "android.notification.image", bad: #""ftp://cdn.example/a.png""#, good: #""https://cdn.example/a.png""#),
        Row(field: "fcm_options.analytics_label", bad: #""a b""#, good: #""promo-1_a.b~c%20""#),
        Row(field: "apns.headers.apns-priority", bad: #""7""#, good: #""5""#),
        Row(field: "apns.headers.apns-expiration", bad: #""tomorrow""#, good: #""1800000000""#),
        Row(field: "apns.headers.apns-collapse-id", bad: "\"\(String(repeating: "c", count: 65))\"", good: #""c""#),
        Row(field: "apns.payload.aps", bad: #""alert""#, good: #"{"alert":"hi","badge":1}"#),
        Row(field: "apns.payload.aps.badge", bad: "-1", good: "0"),
        Row(field: "apns.payload.aps.sound", bad: #"{"name":"s","critical":1,"volume":1.5}"#, good: #"{"name":"s","volume":0.5}"#),
        Row(field: "apns.payload.aps.alert", bad: #"{"loc-args":["x"]}"#, good: #"{"loc-key":"K","loc-args":["x"]}"#),
        Row(field: "webpush.fcm_options.link", bad: #""http://shop.example""#, good: #""https://shop.example/x""#),
        Row(field: "webpush.headers.Urgency", bad: #""urgent""#, good: #""very-low""#),
        Row(field: "webpush.headers.TTL", bad: #""1h""#, good: #""3600""#),
        Row(field: "webpush.notification.dir", bad: #""up""#, good: #""rtl""#),
    ]

    /// The field as the emulator's message names it: map keys in brackets (`headers[TTL]`).
    static func named(_ field: String) -> String {
        let parts = field.split(separator: ".").map(String.init)
        if let h = parts.firstIndex(of: "headers"), h + 1 < parts.count {
            return "message." + parts[...h].joined(separator: ".") + "[\(parts[h + 1])]"
        }
        return "message." + field
    }

    @Test(arguments: rows)
    func eachRuleRefusesItsBrokenValueNamingTheField(row: Row) throws {
        do {
            _ = try MessageValidator.validate(body: Array("{\"message\":\(Self.message(row.field, row.bad))}".utf8))
            Issue.record("accepted \(row.field) = \(row.bad)")
        } catch {
            #expect(error.httpStatus == 400 && error.status == "INVALID_ARGUMENT")
            #expect(error.message.contains(Self.named(row.field)), "\(error.message)")
        }
    }

    @Test(arguments: rows)
    func eachRuleAcceptsAValidValue(row: Row) throws {
        let message = row.field.hasSuffix("body_loc_args") ? Self.message("android.notification", row.good) : Self.message(row.field, row.good)
        _ = try MessageValidator.validate(body: Array("{\"message\":\(message)}".utf8))
    }

    @Test func aConditionWithSixTopicsIsRefused() throws {
        let six = (1...6).map { "'t\($0)' in topics" }.joined(separator: " || ")
        #expect(throws: FCMError.self) { try MessageValidator.validate(body: Array("{\"message\":{\"condition\":\"\(six)\"}}".utf8)) }
        let five = (1...5).map { "'t\($0)' in topics" }.joined(separator: " || ")
        _ = try MessageValidator.validate(body: Array("{\"message\":{\"condition\":\"\(five)\"}}".utf8))
    }

    @Test(arguments: ["2026-11-30T21:00:00Z", "0001-01-01T00:00:00z", "2026-11-30t21:00:00.5-05:30"])
    func rfc3339TimestampsAreAccepted(text: String) { #expect(FieldRules.Timestamp.isValid(text)) }

    @Test(arguments: ["", "2026-11-30T21:00:00", "2026-11-30T24:00:00Z", "2026-11-30T21:00:00.Z", "2026-11-30T21:00:00.1234567890Z",
                      "2026-11-30T21:00:00+1:00", "0000-01-01T00:00:00Z", "2026-11-30T21:00:00Zjunk"])
    func malformedTimestampsAreRefused(text: String) { #expect(!FieldRules.Timestamp.isValid(text)) }
}
