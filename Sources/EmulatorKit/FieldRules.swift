import Foundation

/// FCM's value rules for individual fields (formats, enums, ranges), as `messages:send` answers
/// them: 400 INVALID_ARGUMENT naming the field. Written apart from the connector's validator.
enum FieldRules {
    private static func invalid(_ path: String, _ why: String) -> FCMError {
        .invalidArgument("Invalid value at '\(path)': \(why)")
    }

    /// What FCM's JSON parser says for a value its proto type cannot hold.
    private static func unparsable(_ path: String, _ type: String, _ value: JSONValue) -> FCMError {
        .invalidJSON("Invalid value at '\(path)' (\(type)), \(value.compactText())")
    }

    // MARK: AndroidNotification

    static func checkAndroidNotification(_ n: JSONValue, path: String) throws(FCMError) {
        if case .string(let color)? = MessageValidator.member(n, "color") {
            let hex = color.utf8.dropFirst()
            guard color.hasPrefix("#"), hex.count == 6, hex.allSatisfy(isHexDigit) else {
                throw invalid("\(path).color", "the color must be in the form #RRGGBB.")
            }
        }
        try checkEnum(MessageValidator.member(n, "notification_priority"), path: "\(path).notification_priority",
                      type: "AndroidNotification.NotificationPriority",
                      names: ["PRIORITY_UNSPECIFIED", "PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_DEFAULT", "PRIORITY_HIGH", "PRIORITY_MAX"])
        try checkEnum(MessageValidator.member(n, "visibility"), path: "\(path).visibility",
                      type: "AndroidNotification.Visibility", names: ["VISIBILITY_UNSPECIFIED", "PRIVATE", "PUBLIC", "SECRET"])
        try checkEnum(MessageValidator.member(n, "proxy"), path: "\(path).proxy",
                      type: "AndroidNotification.Proxy", names: ["PROXY_UNSPECIFIED", "ALLOW", "DENY", "IF_PRIORITY_LOWERED"])
        if let time = MessageValidator.member(n, "event_time") {
            guard case .string(let text) = time, Timestamp.isValid(text) else {
                throw unparsable("\(path).event_time", "type.googleapis.com/google.protobuf.Timestamp", time)
            }
        }
        if case .array(let timings)? = MessageValidator.member(n, "vibrate_timings") {
            for (i, item) in timings.enumerated() {
                guard case .string(let text) = item, MessageValidator.durationSeconds(text) != nil else {
                    throw unparsable("\(path).vibrate_timings[\(i)]", "type.googleapis.com/google.protobuf.Duration", item)
                }
            }
        }
        if let light = MessageValidator.member(n, "light_settings") { try checkLightSettings(light, path: "\(path).light_settings") }
        if case .number(let text)? = MessageValidator.member(n, "notification_count") {
            guard let count = Int(text), count >= 0, count <= Int(Int32.max) else {
                throw invalid("\(path).notification_count", "the notification count must not be negative.")
            }
        }
        for (args, key) in [("body_loc_args", "body_loc_key"), ("title_loc_args", "title_loc_key")]
        where MessageValidator.member(n, args) != nil && MessageValidator.member(n, key) == nil {
            throw invalid("\(path).\(args)", "\(key) is required when \(args) is set.")
        }
    }

    private static func checkLightSettings(_ light: JSONValue, path: String) throws(FCMError) {
        guard case .object = light else { throw unparsable(path, "type.googleapis.com/google.firebase.fcm.v1.LightSettings", light) }
        guard let color = MessageValidator.member(light, "color"), case .object(let components) = color else {
            throw invalid("\(path).color", "the light color is required.")
        }
        for (name, value) in components {
            guard ["red", "green", "blue", "alpha"].contains(name) else {
                throw .invalidJSON("Unknown name \"\(name)\" at '\(path).color': Cannot find field.")
            }
            guard case .number(let text) = value, let number = Double(text), number >= 0, number <= 1 else {
                throw invalid("\(path).color.\(name)", "a color component must be between 0 and 1.")
            }
        }
        for name in ["light_on_duration", "light_off_duration"] {
            guard let value = MessageValidator.member(light, name) else { throw invalid("\(path).\(name)", "\(name) is required.") }
            guard case .string(let text) = value, MessageValidator.durationSeconds(text) != nil else {
                throw unparsable("\(path).\(name)", "type.googleapis.com/google.protobuf.Duration", value)
            }
        }
        for (name, _) in light.objectMembers ?? [] where !["color", "light_on_duration", "light_off_duration"].contains(MessageSchema.canonicalName(name)) {
            throw .invalidJSON("Unknown name \"\(name)\" at '\(path)': Cannot find field.")
        }
    }

    private static func checkEnum(_ value: JSONValue?, path: String, type: String, names: Set<String>) throws(FCMError) {
        guard let value else { return }
        guard case .string(let name) = value, names.contains(name) else {
            throw unparsable(path, "type.googleapis.com/google.firebase.fcm.v1.\(type)", value)
        }
    }

    // MARK: ApnsConfig

    static func checkApns(_ apns: JSONValue, path: String) throws(FCMError) {
        for (name, value) in MessageValidator.member(apns, "headers")?.objectMembers ?? [] {
            guard case .string(let text) = value else { continue }
            let header = "\(path).headers[\(name)]"
            switch name.lowercased() {
            case "apns-priority":
                guard ["10", "5", "1"].contains(text) else { throw invalid(header, "apns-priority must be 10, 5 or 1.") }
            case "apns-expiration":
                guard !text.isEmpty, text.count <= 10, text.utf8.allSatisfy(isDecimalDigit) else {
                    throw invalid(header, "apns-expiration must be a UNIX epoch date in seconds.")
                }
            case "apns-collapse-id":
                guard text.utf8.count <= 64 else { throw invalid(header, "apns-collapse-id must not exceed 64 bytes.") }
            default: break
            }
        }
        guard let aps = MessageValidator.member(MessageValidator.member(apns, "payload"), "aps") else { return }
        let at = "\(path).payload.aps"
        guard case .object = aps else { throw invalid(at, "aps must be a dictionary.") }
        if let badge = aps["badge"] {
            guard case .number(let text) = badge, let n = Int(text), n >= 0 else { throw invalid("\(at).badge", "the badge must be a non-negative integer.") }
        }
        switch aps["sound"] {
        case nil, .string?: break
        case .object?:
            guard case .string? = aps["sound"]?["name"] else { throw invalid("\(at).sound", "a critical sound needs a name.") }
            if let volume = aps["sound"]?["volume"] {
                guard case .number(let text) = volume, let v = Double(text), v >= 0, v <= 1 else {
                    throw invalid("\(at).sound.volume", "the volume must be between 0 and 1.")
                }
            }
        default: throw invalid("\(at).sound", "the sound must be a string or a dictionary.")
        }
        switch aps["alert"] {
        case nil, .string?: break
        case .object?:
            for (args, key) in [("loc-args", "loc-key"), ("title-loc-args", "title-loc-key"), ("subtitle-loc-args", "subtitle-loc-key")]
            where aps["alert"]?[args] != nil && aps["alert"]?[key] == nil {
                throw invalid("\(at).alert.\(args)", "\(key) is required when \(args) is set.")
            }
        default: throw invalid("\(at).alert", "the alert must be a string or a dictionary.")
        }
    }

    // MARK: WebpushConfig

    static func checkWebpush(_ webpush: JSONValue, path: String) throws(FCMError) {
        for (name, value) in MessageValidator.member(webpush, "headers")?.objectMembers ?? [] {
            guard case .string(let text) = value else { continue }
            switch name.lowercased() {
            case "urgency":
                guard ["very-low", "low", "normal", "high"].contains(text) else {
                    throw invalid("\(path).headers[\(name)]", "Urgency must be very-low, low, normal or high.")
                }
            case "ttl":
                guard !text.isEmpty, text.count <= 10, text.utf8.allSatisfy(isDecimalDigit) else {
                    throw invalid("\(path).headers[\(name)]", "TTL must be a number of seconds.")
                }
            default: break
            }
        }
        if case .string(let dir)? = MessageValidator.member(webpush, "notification")?["dir"], !["auto", "ltr", "rtl"].contains(dir) {
            throw invalid("\(path).notification.dir", "dir must be auto, ltr or rtl.")
        }
    }

    /// How many `in topics` clauses a condition has.
    static func topicCount(_ condition: String) -> Int {
        condition.components(separatedBy: "in topics").count - 1
    }

    // MARK: Formats

    private static func isDecimalDigit(_ b: UInt8) -> Bool { (48...57).contains(b) }
    private static func isHexDigit(_ b: UInt8) -> Bool { isDecimalDigit(b) || (65...70).contains(b) || (97...102).contains(b) }

    /// google.protobuf.Timestamp's JSON form (RFC 3339).
    enum Timestamp {
        static func isValid(_ text: String) -> Bool {
            var scanner = Array(text.utf8)[...]
            func digits(_ n: Int, max: Int, min: Int = 0) -> Bool {
                guard scanner.count >= n else { return false }
                let part = scanner.prefix(n)
                guard part.allSatisfy(isDecimalDigit) else { return false }
                scanner = scanner.dropFirst(n)
                let value = part.reduce(0) { $0 * 10 + Int($1) - 48 }
                return value >= min && value <= max
            }
            func literal(_ options: String) -> Bool {
                guard let first = scanner.first, options.utf8.contains(first) else { return false }
                scanner = scanner.dropFirst()
                return true
            }
            guard digits(4, max: 9999, min: 1), literal("-"), digits(2, max: 12, min: 1), literal("-"), digits(2, max: 31, min: 1),
                  literal("Tt"), digits(2, max: 23), literal(":"), digits(2, max: 59), literal(":"), digits(2, max: 59) else { return false }
            if scanner.first == UInt8(ascii: ".") {
                scanner = scanner.dropFirst()
                let fraction = scanner.prefix(while: isDecimalDigit)
                guard (1...9).contains(fraction.count) else { return false }
                scanner = scanner.dropFirst(fraction.count)
            }
            if literal("Zz") { return scanner.isEmpty }
            guard literal("+-"), digits(2, max: 23), literal(":"), digits(2, max: 59) else { return false }
            return scanner.isEmpty
        }
    }
}
