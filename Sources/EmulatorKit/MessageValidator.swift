/// Checks a `messages:send` request body the way FCM HTTP v1 does. Written independently of the
/// connector's composer on purpose: a bug shared by both would hide itself.
enum MessageValidator {
    /// Where an accepted message goes.
    enum Target: Equatable, Sendable {
        case token(String)
        case topic(String)
        case condition(String)
    }

    /// A request that passed every check.
    struct ValidSend: Sendable {
        let message: JSONValue
        /// Compact JSON of `message`, as recorded.
        let messageJSON: [UInt8]
        let target: Target
        let validateOnly: Bool
    }

    static let payloadLimit = 4096
    static let topicPayloadLimit = 2048
    static let maxTTLSeconds = 2_419_200
    static let reservedDataKeys: Set<String> = ["from", "message_type"]

    static func validate(body: [UInt8]) throws(FCMError) -> ValidSend {
        let root: JSONValue
        do { root = try JSONParser.parse(body) } catch {
            throw .invalidJSON("Syntax error at byte \(error.offset): \(error.reason).")
        }
        try checkShape(root, kind: MessageSchema.sendRequest, parent: "", name: "")
        guard let message = member(root, "message") else { throw .invalidArgument("Request contains an invalid argument: 'message' is required.") }
        var validateOnly = false
        if case .bool(let flag)? = member(root, "validate_only") { validateOnly = flag }
        let target = try checkTarget(message)
        try checkData(member(message, "data"), path: "message.data", reserved: true)
        if let notification = member(message, "notification") {
            try checkImageURL(member(notification, "image"), path: "message.notification.image")
        }
        try checkAnalyticsLabel(member(member(message, "fcm_options"), "analytics_label"), path: "message.fcm_options.analytics_label")
        if let android = member(message, "android") { try checkAndroid(android) }
        if let apns = member(message, "apns") {
            try checkAnalyticsLabel(member(member(apns, "fcm_options"), "analytics_label"), path: "message.apns.fcm_options.analytics_label")
            try checkImageURL(member(member(apns, "fcm_options"), "image"), path: "message.apns.fcm_options.image")
            try FieldRules.checkApns(apns, path: "message.apns")
        }
        if let webpush = member(message, "webpush") {
            let options = member(webpush, "fcm_options")
            try checkAnalyticsLabel(member(options, "analytics_label"), path: "message.webpush.fcm_options.analytics_label")
            if case .string(let link)? = member(options, "link"), !link.lowercased().hasPrefix("https://") {
                throw .invalidArgument("Invalid value at 'message.webpush.fcm_options.link': the link must be an HTTPS URL.")
            }
            try FieldRules.checkWebpush(webpush, path: "message.webpush")
        }
        let encoded = try checkSize(message, target: target)
        return ValidSend(message: message, messageJSON: encoded, target: target, validateOnly: validateOnly)
    }

    /// A member of an object by its snake_case name, whichever spelling the sender used.
    static func member(_ value: JSONValue?, _ name: String) -> JSONValue? {
        guard case .object(let members)? = value else { return nil }
        if let exact = members.last(where: { $0.0 == name }) { return exact.1 }
        guard name.utf8.contains(UInt8(ascii: "_")) else { return nil }
        return members.last(where: { MessageSchema.canonicalName($0.0) == name })?.1
    }

    // MARK: Shape: known field names and JSON types

    /// `parent` and `name` make the field's path (built only for an error or a nested value).
    private static func checkShape(_ value: JSONValue, kind: MessageSchema.Kind, parent: String, name: String) throws(FCMError) {
        var path: String { parent.isEmpty ? name : (name.hasPrefix("[") ? parent + name : parent + "." + name) }
        func invalid(_ type: String) -> FCMError {
            .invalidJSON("Invalid value at '\(path)' (\(type)), \(value.compactText())")
        }
        switch kind {
        case .any: return
        case .string: guard case .string = value else { throw invalid("TYPE_STRING") }
        case .bool: guard case .bool = value else { throw invalid("TYPE_BOOL") }
        case .integer:
            if case .number(let n) = value, Int(n) != nil { return }
            throw invalid("TYPE_INT32")
        case .stringList:
            guard case .array(let items) = value else { throw invalid("TYPE_STRING") }
            for (i, item) in items.enumerated() {
                guard case .string = item else { throw .invalidJSON("Invalid value at '\(path)[\(i)]' (TYPE_STRING), \(item.compactText())") }
            }
        case .anyObject: guard case .object = value else { throw invalid("type.googleapis.com/google.protobuf.Struct") }
        case .stringMap:
            guard case .object(let members) = value else { throw invalid("map<string, string>") }
            for (key, item) in members {
                guard case .string = item else {
                    throw .invalidJSON("Invalid value at '\(path)[\(key)]' (TYPE_STRING), \(item.compactText())")
                }
            }
        case .message(let typeName, let fields):
            guard case .object(let members) = value else { throw invalid("type.googleapis.com/google.firebase.fcm.v1.\(typeName)") }
            let here = members.isEmpty ? "" : path
            for (fieldName, item) in members {
                guard let fieldKind = fields[MessageSchema.canonicalName(fieldName)] else {
                    let location = here.isEmpty ? "" : " at '\(here)'"
                    throw .invalidJSON("Unknown name \"\(fieldName)\"\(location): Cannot find field.")
                }
                if case .null = item { continue }
                try checkShape(item, kind: fieldKind, parent: here, name: fieldName)
            }
        }
    }

    // MARK: FCM's rules

    private static func checkTarget(_ message: JSONValue) throws(FCMError) -> Target {
        var targets: [Target] = []
        if case .string(let token)? = member(message, "token") { targets.append(.token(token)) }
        if case .string(let topic)? = member(message, "topic") { targets.append(.topic(topic)) }
        if case .string(let condition)? = member(message, "condition") { targets.append(.condition(condition)) }
        guard targets.count == 1, let target = targets.first else {
            if targets.isEmpty {
                throw .invalidArgument("Recipient of the message is not set: exactly one of 'message.token', 'message.topic' or 'message.condition' is required.")
            }
            throw .invalidJSON("Invalid value at 'message' (oneof), oneof field 'target' is already set: exactly one of 'message.token', 'message.topic' or 'message.condition' is allowed.")
        }
        switch target {
        case .token(let token) where token.isEmpty:
            throw .invalidArgument("The registration token is not a valid FCM registration token: 'message.token' is empty.")
        case .topic(let topic):
            if topic.hasPrefix("/topics/") {
                throw .invalidArgument("Invalid value at 'message.topic': give the topic name without the '/topics/' prefix.")
            }
            guard !topic.isEmpty, topic.utf8.allSatisfy(isTopicCharacter) else {
                throw .invalidArgument("Invalid value at 'message.topic': a topic name must match [a-zA-Z0-9-_.~%]+.")
            }
        case .condition(let condition) where condition.trimmingSpaces.isEmpty:
            throw .invalidArgument("Invalid value at 'message.condition': the condition is empty.")
        case .condition(let condition) where FieldRules.topicCount(condition) > 5:
            throw .invalidArgument("Invalid value at 'message.condition': a condition may name at most 5 topics.")
        default: break
        }
        return target
    }

    private static func checkData(_ data: JSONValue?, path: String, reserved: Bool) throws(FCMError) {
        guard let members = data?.objectMembers else { return }
        for (key, _) in members {
            let lowered = key.lowercased()
            if reservedDataKeys.contains(lowered) || lowered.hasPrefix("google.") || lowered.hasPrefix("gcm.") {
                throw .invalidArgument("Invalid value at '\(path)': the data key \"\(key)\" is reserved (from, message_type, google.*, gcm.*).")
            }
        }
    }

    private static func checkAndroid(_ android: JSONValue) throws(FCMError) {
        if case .string(let priority)? = member(android, "priority") {
            guard ["normal", "high"].contains(priority.lowercased()) else {
                throw .invalidJSON("Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority), \(JSONValue.quoted(priority))")
            }
        }
        if case .string(let ttl)? = member(android, "ttl") {
            guard let seconds = durationSeconds(ttl) else {
                throw .invalidJSON("Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration), \(JSONValue.quoted(ttl))")
            }
            guard seconds <= Double(maxTTLSeconds) else {
                throw .invalidArgument("Invalid value at 'message.android.ttl': the TTL must be between 0 and \(maxTTLSeconds)s.")
            }
        }
        try checkData(member(android, "data"), path: "message.android.data", reserved: true)
        try checkImageURL(member(member(android, "notification"), "image"), path: "message.android.notification.image")
        if let notification = member(android, "notification") {
            try FieldRules.checkAndroidNotification(notification, path: "message.android.notification")
        }
        try checkAnalyticsLabel(member(member(android, "fcm_options"), "analytics_label"), path: "message.android.fcm_options.analytics_label")
    }

    /// Seconds of a protobuf Duration string (`"86400s"`, `"3.5s"`), or nil when malformed.
    static func durationSeconds(_ text: String) -> Double? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty,
              parts[0].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].count), parts[1].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        }
        return Double(number)
    }

    private static func checkAnalyticsLabel(_ label: JSONValue?, path: String) throws(FCMError) {
        guard case .string(let text)? = label else { return }
        guard (1...50).contains(text.utf8.count), text.utf8.allSatisfy(isTopicCharacter) else {
            throw .invalidArgument("Invalid value at '\(path)': an analytics label must match [a-zA-Z0-9-_.~%]{1,50}.")
        }
    }

    private static func checkImageURL(_ image: JSONValue?, path: String) throws(FCMError) {
        guard case .string(let url)? = image else { return }
        let lowered = url.lowercased()
        let rest: Substring
        if lowered.hasPrefix("https://") { rest = url.dropFirst(8) } else if lowered.hasPrefix("http://") { rest = url.dropFirst(7) } else {
            throw .invalidArgument("Invalid value at '\(path)': the image must be an http(s) URL.")
        }
        guard let host = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first, !host.isEmpty,
              !url.utf8.contains(UInt8(ascii: " ")) else {
            throw .invalidArgument("Invalid value at '\(path)': the image must be an http(s) URL.")
        }
    }

    /// Checks the size rule; returns the compact encoding of the whole message. The payload FCM
    /// limits is the message without its target member (`token` / `topic` / `condition`).
    private static func checkSize(_ message: JSONValue, target: Target) throws(FCMError) -> [UInt8] {
        let encoded = message.compactEncoded()
        guard case .object(let members) = message else { return encoded }
        var size = encoded.count
        for (key, value) in members where ["token", "topic", "condition"].contains(MessageSchema.canonicalName(key)) {
            var member: [UInt8] = []
            JSONValue.encodeString(key, into: &member)
            value.encode(into: &member)
            size -= member.count + 1 + (members.count > 1 ? 1 : 0)  // ':' and the separating ','
        }
        let limit: Int
        switch target {
        case .topic, .condition: limit = topicPayloadLimit  // topic messaging, condition included
        default: limit = payloadLimit
        }
        guard size <= limit else {
            throw .invalidArgument("Invalid value at 'message': the message payload is \(size) bytes, over the \(limit)-byte limit (Message is too big).")
        }
        return encoded
    }

    static func isTopicCharacter(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"):
            return true
        default: return false
        }
    }
}

extension String {
    var trimmingSpaces: Substring {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s = s.dropFirst() }
        while s.last?.isWhitespace == true { s = s.dropLast() }
        return s
    }
}
