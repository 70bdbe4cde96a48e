/// Value rules of FCM HTTP v1 fields beyond their names and JSON kinds: the formats, enums and
/// ranges FCM (or the Firebase Admin SDKs, or APNs / Web Push behind FCM) enforce. Each rule
/// has its own stable `IssueCode`; docs/fcm-fidelity.md lists them with their sources and tests.
enum FCMFieldRules {
    static let notificationPriorities: Set<String> = ["PRIORITY_UNSPECIFIED", "PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_DEFAULT",
                                                      "PRIORITY_HIGH", "PRIORITY_MAX"]
    static let visibilities: Set<String> = ["VISIBILITY_UNSPECIFIED", "PRIVATE", "PUBLIC", "SECRET"]
    static let proxies: Set<String> = ["PROXY_UNSPECIFIED", "ALLOW", "DENY", "IF_PRIORITY_LOWERED"]
    /// APNs: 10 immediately, 5 power-aware, 1 lowest.
    static let apnsPriorities: Set<String> = ["10", "5", "1"]
    /// RFC 8030 §5.3.
    static let webpushUrgencies: Set<String> = ["very-low", "low", "normal", "high"]
    static let webpushDirections: Set<String> = ["auto", "ltr", "rtl"]

    /// `android.notification` at `path`.
    static func androidNotificationIssues(_ n: [String: JSONValue], path: String) -> [ContractIssue] {
        var issues: [ContractIssue] = []
        func add(_ code: IssueCode, _ field: String, _ message: String) {
            issues.append(ContractIssue(code, field: "\(path).\(field)", message))
        }
        if case .string(let color)? = n["color"], !isHexColor(color, digits: [6]) {
            add(.androidColor, "color", "must be #rrggbb, got \"\(color)\"")
        }
        checkEnum(n["notification_priority"], notificationPriorities, .androidNotificationPriority, "notification_priority", add)
        checkEnum(n["visibility"], visibilities, .androidVisibility, "visibility", add)
        checkEnum(n["proxy"], proxies, .androidProxy, "proxy", add)
        if case .string(let time)? = n["event_time"], !isTimestamp(time) {
            add(.androidEventTime, "event_time", "must be an RFC 3339 timestamp such as \"2026-11-30T21:00:00.5Z\", got \"\(time)\"")
        }
        if case .array(let timings)? = n["vibrate_timings"] {
            for (i, item) in timings.enumerated() where item.stringValue.flatMap(MessageValidator.durationSeconds) == nil {
                add(.androidVibrateTimings, "vibrate_timings[\(i)]", "must be a duration such as \"0.5s\", got \(item.encodedString())")
            }
        }
        if let light = n["light_settings"] { issues += lightSettingsIssues(light, path: "\(path).light_settings") }
        if let count = n["notification_count"]?.intValue, !(0...Int64(Int32.max)).contains(count) {
            add(.androidNotificationCount, "notification_count", "must be from 0 to \(Int32.max), got \(count)")
        }
        for (args, key) in [("body_loc_args", "body_loc_key"), ("title_loc_args", "title_loc_key")] where n[args] != nil && n[key] == nil {
            add(.locKeyMissing, args, "\(key) is required with \(args)")
        }
        return issues
    }

    /// `android.notification.light_settings`: color (red, green, blue, optional alpha, each 0…1)
    /// and both durations are required.
    static func lightSettingsIssues(_ value: JSONValue, path: String) -> [ContractIssue] {
        func issue(_ message: String) -> [ContractIssue] { [ContractIssue(.androidLightSettings, field: path, message)] }
        guard case .object(let light) = value else { return issue("must be an object") }
        guard case .object(let color)? = light["color"] else {
            return issue("color is required: {\"red\": 0…1, \"green\": 0…1, \"blue\": 0…1, \"alpha\": 0…1}")
        }
        for (name, component) in color {
            guard ["red", "green", "blue", "alpha"].contains(name) else { return issue("color.\(name) is not a color component") }
            guard let v = number(component), (0...1).contains(v) else { return issue("color.\(name) must be a number from 0 to 1") }
        }
        for name in ["light_on_duration", "light_off_duration"] {
            guard case .string(let text)? = light[name], MessageValidator.durationSeconds(text) != nil else {
                return issue("\(name) is required, as a duration such as \"0.5s\"")
            }
        }
        if let unknown = light.keys.sorted().first(where: { !["color", "light_on_duration", "light_off_duration"].contains($0) }) {
            return issue("unknown field \(unknown)")
        }
        return []
    }

    /// `apns` at `path`: the headers FCM hands to APNs and the `aps` dictionary.
    static func apnsIssues(_ apns: [String: JSONValue], path: String) -> [ContractIssue] {
        var issues: [ContractIssue] = []
        if case .object(let headers)? = apns["headers"] {
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                guard let text = value.stringValue else { continue }
                let field = "\(path).headers.\(name)"
                switch name.lowercased() {
                case "apns-priority" where !apnsPriorities.contains(text):
                    issues.append(ContractIssue(.apnsPriority, field: field, "must be \"10\", \"5\" or \"1\", got \"\(text)\""))
                case "apns-expiration" where text.isEmpty || text.utf8.count > 10 || !text.utf8.allSatisfy(isDigit):
                    issues.append(ContractIssue(.apnsExpiration, field: field, "must be a UNIX time in seconds (or 0), got \"\(text)\""))
                case "apns-collapse-id" where text.utf8.count > 64:
                    issues.append(ContractIssue(.apnsCollapseID, field: field, "must be at most 64 bytes, got \(text.utf8.count)"))
                default: break
                }
            }
        }
        if case .object(let payload)? = apns["payload"], let aps = payload["aps"] {
            issues += apsIssues(aps, path: "\(path).payload.aps")
        }
        return issues
    }

    private static func apsIssues(_ value: JSONValue, path: String) -> [ContractIssue] {
        guard case .object(let aps) = value else { return [ContractIssue(.apnsPayload, field: path, "must be an object")] }
        var issues: [ContractIssue] = []
        if let badge = aps["badge"], !(badge.intValue.map { $0 >= 0 } ?? false) {
            issues.append(ContractIssue(.apnsPayload, field: "\(path).badge", "must be an integer of 0 or more"))
        }
        switch aps["sound"] {
        case nil, .string?: break
        case .object(let sound)?:
            if let volume = sound["volume"], !(number(volume).map { (0...1).contains($0) } ?? false) {
                issues.append(ContractIssue(.apnsPayload, field: "\(path).sound.volume", "must be a number from 0 to 1"))
            }
            if case .string? = sound["name"] {} else {
                issues.append(ContractIssue(.apnsPayload, field: "\(path).sound.name", "a critical sound needs a name"))
            }
        default:
            issues.append(ContractIssue(.apnsPayload, field: "\(path).sound", "must be a sound name or a critical-sound object"))
        }
        if case .object(let alert)? = aps["alert"] {
            for (args, key) in [("loc-args", "loc-key"), ("title-loc-args", "title-loc-key"), ("subtitle-loc-args", "subtitle-loc-key")]
            where alert[args] != nil && alert[key] == nil {
                issues.append(ContractIssue(.locKeyMissing, field: "\(path).alert.\(args)", "\(key) is required with \(args)"))
            }
        } else if let alert = aps["alert"], alert.stringValue == nil {
            issues.append(ContractIssue(.apnsPayload, field: "\(path).alert", "must be a string or an object"))
        }
        return issues
    }

    /// `webpush` at `path`: Web Push headers (RFC 8030) and the notification's direction.
    static func webpushIssues(_ webpush: [String: JSONValue], path: String) -> [ContractIssue] {
        var issues: [ContractIssue] = []
        if case .object(let headers)? = webpush["headers"] {
            for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
                guard let text = value.stringValue else { continue }
                switch name.lowercased() {
                case "urgency" where !webpushUrgencies.contains(text):
                    issues.append(ContractIssue(.webpushUrgency, field: "\(path).headers.\(name)",
                                                "must be very-low, low, normal or high, got \"\(text)\""))
                case "ttl" where text.isEmpty || text.utf8.count > 10 || !text.utf8.allSatisfy(isDigit):
                    issues.append(ContractIssue(.webpushTTL, field: "\(path).headers.\(name)", "must be whole seconds, got \"\(text)\""))
                default: break
                }
            }
        }
        if case .object(let notification)? = webpush["notification"], case .string(let dir)? = notification["dir"],
           !webpushDirections.contains(dir) {
            issues.append(ContractIssue(.webpushDirection, field: "\(path).notification.dir", "must be auto, ltr or rtl, got \"\(dir)\""))
        }
        return issues
    }

    // MARK: Formats

    private static func checkEnum(_ value: JSONValue?, _ allowed: Set<String>, _ code: IssueCode, _ field: String,
                                  _ add: (IssueCode, String, String) -> Void) {
        guard case .string(let text)? = value, !allowed.contains(text) else { return }
        add(code, field, "must be one of \(allowed.sorted().joined(separator: ", ")), got \"\(text)\"")
    }

    static func isHexColor(_ text: String, digits: Set<Int>) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "#"), digits.contains(bytes.count - 1) else { return false }
        return bytes.dropFirst().allSatisfy { isDigit($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0) }
    }

    /// RFC 3339 as protobuf's Timestamp reads it: `YYYY-MM-DDTHH:MM:SS`, up to 9 fraction
    /// digits, then `Z` or `±HH:MM`.
    static func isTimestamp(_ text: String) -> Bool {
        let b = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= b.count, b[range].allSatisfy(isDigit) else { return nil }
            return b[range].reduce(0) { $0 * 10 + Int($1 - 48) }
        }
        guard b.count >= 20, let year = number(0..<4), b[4] == UInt8(ascii: "-"), let month = number(5..<7), b[7] == UInt8(ascii: "-"),
              let day = number(8..<10), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
              let hour = number(11..<13), b[13] == UInt8(ascii: ":"), let minute = number(14..<16), b[16] == UInt8(ascii: ":"),
              let second = number(17..<19),
              year >= 1, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else { return false }
        var i = 19
        if b[i] == UInt8(ascii: ".") {
            let start = i + 1
            i = start
            while i < b.count, isDigit(b[i]) { i += 1 }
            guard (1...9).contains(i - start) else { return false }
        }
        guard i < b.count else { return false }
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") { return i + 1 == b.count }
        guard b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), b.count == i + 6, let oh = number(i + 1..<i + 3),
              b[i + 3] == UInt8(ascii: ":"), let om = number(i + 4..<i + 6) else { return false }
        return oh < 24 && om < 60
    }

    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }
}
