/// The field names FCM HTTP v1 knows in each part of a message, and what each field holds. FCM's
/// JSON parser accepts a field's snake_case name and its lowerCamelCase name alike.
enum MessageSchema {
    /// What a field holds.
    indirect enum Kind: Sendable {
        case string
        case bool
        case integer
        case stringList
        /// A map of string to string (`data`, `headers`).
        case stringMap
        /// Any JSON object (`apns.payload`, `webpush.notification`).
        case anyObject
        /// A nested message with its own known fields.
        case message(String, [String: Kind])
        /// Any JSON value (fields the emulator does not check in depth).
        case any
    }

    static let fcmOptions: Kind = .message("FcmOptions", ["analytics_label": .string])
    static let notification: Kind = .message("Notification", ["title": .string, "body": .string, "image": .string])
    static let androidNotification: Kind = .message("AndroidNotification", [
        "title": .string, "body": .string, "icon": .string, "color": .string, "sound": .string,
        "tag": .string, "click_action": .string, "body_loc_key": .string, "body_loc_args": .stringList,
        "title_loc_key": .string, "title_loc_args": .stringList, "channel_id": .string, "ticker": .string,
        "sticky": .bool, "event_time": .string, "local_only": .bool, "notification_priority": .string,
        "default_sound": .bool, "default_vibrate_timings": .bool, "default_light_settings": .bool,
        "vibrate_timings": .stringList, "visibility": .string, "notification_count": .integer,
        "light_settings": .anyObject, "image": .string, "bypass_proxy_notification": .bool, "proxy": .string,
    ])
    static let android: Kind = .message("AndroidConfig", [
        "collapse_key": .string, "priority": .string, "ttl": .string, "restricted_package_name": .string,
        "data": .stringMap, "notification": androidNotification,
        "fcm_options": .message("AndroidFcmOptions", ["analytics_label": .string]),
        "direct_boot_ok": .bool, "bandwidth_constrained_ok": .bool, "restricted_satellite_ok": .bool,
    ])
    static let apns: Kind = .message("ApnsConfig", [
        "headers": .stringMap, "payload": .anyObject, "live_activity_token": .string,
        "fcm_options": .message("ApnsFcmOptions", ["analytics_label": .string, "image": .string]),
    ])
    static let webpush: Kind = .message("WebpushConfig", [
        "headers": .stringMap, "data": .stringMap, "notification": .anyObject,
        "fcm_options": .message("WebpushFcmOptions", ["link": .string, "analytics_label": .string]),
    ])
    static let message: Kind = .message("Message", [
        "name": .string, "data": .stringMap, "notification": notification, "android": android,
        "webpush": webpush, "apns": apns, "fcm_options": fcmOptions,
        "token": .string, "topic": .string, "condition": .string,
    ])
    static let sendRequest: Kind = .message("SendMessageRequest", ["message": message, "validate_only": .bool])

    /// `lowerCamelCase` → `snake_case` (a snake_case name maps to itself).
    static func canonicalName(_ name: String) -> String {
        var probe = name
        let hasUppercase = probe.withUTF8 { bytes in bytes.contains(where: { $0 &- UInt8(ascii: "A") < 26 }) }
        guard hasUppercase else { return name }
        var out = ""
        for ch in name {
            if ch.isUppercase { out += "_" + ch.lowercased() } else { out.append(ch) }
        }
        return out
    }
}
