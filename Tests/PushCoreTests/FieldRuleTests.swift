import Testing
@testable import PushCore

/// FCM's field formats, enums and ranges, one row per rule (docs/fcm-fidelity.md): each rule
/// refuses its broken value with its own code at its field, and accepts a valid one.
@Suite struct FieldRuleTests {
    struct Row: Sendable, CustomStringConvertible {
        let code: IssueCode
        let field: String
        let bad: JSONValue
        let good: JSONValue
        var description: String { "\(code.rawValue) @ \(field)" }
    }

    /// A token message with `value` set at the dotted `field` (inside `message`).
    static func message(setting field: String, to value: JSONValue) -> JSONValue {
        func set(_ object: JSONValue, _ keys: ArraySlice<String>) -> JSONValue {
            guard let key = keys.first else { return value }
            var members = object.objectValue ?? [:]
            members[key] = set(members[key] ?? .object([:]), keys.dropFirst())
            return .object(members)
        }
        return set(["token": "tok", "notification": ["title": "T"]], ArraySlice(field.split(separator: ".").map(String.init)))
    }

    static let light: JSONValue = ["color": ["red": 1, "green": 0.5, "blue": 0, "alpha": 1], "light_on_duration": "0.5s", "light_off_duration": "1s"]

    static let rows: [Row] = [
        Row(code: .androidTTL, field: "android.ttl", bad: "-1s", good: "3.5s"),
        Row(code: .androidTTL, field: "android.ttl", bad: "1.5", good: "0s"),
        Row(code: .androidPriority, field: "android.priority", bad: "urgent", good: "high"),
        Row(code: .androidColor, field: "android.notification.color", bad: "red", good: "#FF00aa"),
        Row(code: .androidColor, field: "android.notification.color", bad: "#ff00aa80", good: "#000000"),
        Row(code: .androidNotificationPriority, field: "android.notification.notification_priority", bad: "high", good: "PRIORITY_HIGH"),
        Row(code: .androidVisibility, field: "android.notification.visibility", bad: "public", good: "PUBLIC"),
        Row(code: .androidProxy, field: "android.notification.proxy", bad: "allow", good: "IF_PRIORITY_LOWERED"),
        Row(code: .androidEventTime, field: "android.notification.event_time", bad: "2026-11-30 21:00:00", good: "2026-11-30T21:00:00.123456789Z"),
        Row(code: .androidEventTime, field: "android.notification.event_time", bad: "2026-13-01T00:00:00Z", good: "2026-11-30T21:00:00+01:00"),
        Row(code: .androidVibrateTimings, field: "android.notification.vibrate_timings", bad: ["0.5s", "1"], good: ["0.5s", "1s"]),
        Row(code: .androidLightSettings, field: "android.notification.light_settings", bad: ["color": ["red": 1], "light_on_duration": "1s"], good: light),
        Row(code: .androidLightSettings, field: "android.notification.light_settings",
            bad: ["color": ["red": 2], "light_on_duration": "1s", "light_off_duration": "1s"], good: light),
        Row(code: .androidNotificationCount, field: "android.notification.notification_count", bad: -1, good: 0),
        Row(code: .locKeyMissing, field: "android.notification.body_loc_args", bad: ["x"], good: .null),
        Row(code: .imageURL, field: "android.notification.image", bad: "http://cdn.example/a.png", good: "https://cdn.example/a.png"),
        Row(code: .imageURL, field: "notification.image", bad: "ftp://cdn.example/a.png", good: "https://cdn.example/a.png"),
        Row(code: .analyticsLabel, field: "fcm_options.analytics_label", bad: "a b", good: "promo-1_a.b~c%20"),
        Row(code: .analyticsLabel, field: "android.fcm_options.analytics_label", bad: .string(String(repeating: "a", count: 51)), good: "x"),
        Row(code: .apnsPriority, field: "apns.headers.apns-priority", bad: "7", good: "5"),
        Row(code: .apnsExpiration, field: "apns.headers.apns-expiration", bad: "tomorrow", good: "1800000000"),
        Row(code: .apnsCollapseID, field: "apns.headers.apns-collapse-id", bad: .string(String(repeating: "c", count: 65)), good: "c"),
        Row(code: .apnsPayload, field: "apns.payload.aps", bad: "alert", good: ["alert": "hi", "badge": 1]),
        Row(code: .apnsPayload, field: "apns.payload.aps.badge", bad: -1, good: 0),
        Row(code: .apnsPayload, field: "apns.payload.aps.sound", bad: ["name": "s", "critical": 1, "volume": 1.5], good: ["name": "s", "volume": 0.5]),
        Row(code: .locKeyMissing, field: "apns.payload.aps.alert", bad: ["loc-args": ["x"]], good: ["loc-key": "K", "loc-args": ["x"]]),
        Row(code: .imageURL, field: "apns.fcm_options.image", bad: "http://cdn.example/a.png", good: "https://cdn.example/a.png"),
        Row(code: .webpushLink, field: "webpush.fcm_options.link", bad: "http://shop.example", good: "https://shop.example/x"),
        Row(code: .webpushUrgency, field: "webpush.headers.Urgency", bad: "urgent", good: "very-low"),
        Row(code: .webpushTTL, field: "webpush.headers.TTL", bad: "1h", good: "3600"),
        Row(code: .webpushDirection, field: "webpush.notification.dir", bad: "up", good: "rtl"),
    ]

    @Test(arguments: rows)
    func eachRuleRefusesItsBrokenValueWithItsOwnCode(row: Row) {
        let issues = MessageValidator().validate(message: Self.message(setting: row.field, to: row.bad))
        #expect(issues.map(\.code) == [row.code], "\(issues)")
        #expect(issues.first?.field.hasPrefix("message." + row.field.split(separator: ".").prefix(2).joined(separator: ".")) == true,
                "\(issues)")
    }

    @Test(arguments: rows)
    func eachRuleAcceptsAValidValue(row: Row) {
        let message = row.good == .null ? Self.message(setting: "android.notification.body_loc_key", to: "K")
                                        : Self.message(setting: row.field, to: row.good)
        #expect(MessageValidator().validate(message: message) == [])
    }

    @Test func theSameRulesApplyToAppIDExtraOptions() {
        let issues = MessageValidator().validateSections(["android": ["notification": ["color": "red", "visibility": "public"]],
                                                          "apns": ["headers": ["apns-priority": "7"]]], path: "apps[0].extra_options")
        #expect(Set(issues.map(\.field)) == ["apps[0].extra_options.android.notification.color",
                                             "apps[0].extra_options.android.notification.visibility",
                                             "apps[0].extra_options.apns.headers.apns-priority"])
    }

    @Test(arguments: ["2026-11-30T21:00:00Z", "0001-01-01T00:00:00z", "2026-11-30t21:00:00.5-05:30"])
    func rfc3339TimestampsAreAccepted(text: String) { #expect(FCMFieldRules.isTimestamp(text)) }

    @Test(arguments: ["", "2026-11-30T21:00:00", "2026-11-30T24:00:00Z", "2026-11-30T21:00:00.Z", "2026-11-30T21:00:00.1234567890Z",
                      "2026-11-30T21:00:00+1:00", "0000-01-01T00:00:00Z", "2026-11-30T21:00:00Zjunk"])
    func malformedTimestampsAreRefused(text: String) { #expect(!FCMFieldRules.isTimestamp(text)) }
}
