/// Checks an FCM HTTP v1 `message` against every limit FCM enforces, before anything is sent.
///
/// Each rule has its own `IssueCode` and names the field. The payload size rule is the project's
/// documented reading of FCM's 4 KB limit: the compact JSON of the message without its target
/// key (`token`, `topic` or `condition`) must fit in 4096 bytes, or 2048 for topic and
/// condition messages.
public struct MessageValidator: Sendable {
    public var maxPayloadBytes = 4096
    public var maxTopicPayloadBytes = 2048
    /// FCM accepts at most five topics in a condition.
    public var maxConditionTopics = 5
    /// 28 days, FCM's maximum Android TTL.
    public static let maxTTLSeconds = 2_419_200.0

    public init() {}

    /// Every issue of a complete message (target included).
    public func validate(message: JSONValue) -> [ContractIssue] {
        guard case .object(let m) = message else {
            return [ContractIssue(.wrongType, field: "message", "must be an object")]
        }
        var issues = FCMMessageSchema.message.check(m, path: "message")
        issues += targetIssues(m)
        if let data = m["data"]?.objectValue { issues += dataKeyIssues(data, path: "message.data") }
        issues += imageAndRuleIssues(m)
        if issues.isEmpty { issues += sizeIssues(m) }
        return issues
    }

    /// The issues of a message that do not depend on its target or on the size: names and kinds,
    /// data keys, URLs and value rules. For a job's shared part (its `data` without the
    /// recipient's, no target): when it has none, a recipient's message can only break
    /// `recipientIssues` and the size limit, so those alone give `validate(message:)`'s answer.
    public func sharedIssues(message m: [String: JSONValue]) -> [ContractIssue] {
        var issues = FCMMessageSchema.message.check(m, path: "message")
        if let data = m["data"]?.objectValue { issues += dataKeyIssues(data, path: "message.data") }
        return issues + imageAndRuleIssues(m)
    }

    /// True when a message holding only a job's own members has no issue: `data` with these keys
    /// (string values) and a `notification` of title / body / image strings. The same answer as
    /// `sharedIssues(message:)` of that message, without building it: only the data keys and the
    /// image URL can break a rule there.
    public func ownMembersAreClean(dataKeys: some Collection<String>, notificationImage: String?) -> Bool {
        if let image = notificationImage, !isHTTPS(image) { return false }
        return dataKeys.allSatisfy { MessageValidator.dataKeyIssue($0, field: "data") == nil }
    }

    /// The issues of what one recipient adds to a clean shared part (see `sharedIssues`): its
    /// target and its own data keys, in `validate(message:)`'s order.
    public func recipientIssues(target: (key: String, value: String), dataKeys: some Collection<String>) -> [ContractIssue] {
        targetValueIssues(key: target.key, value: target.value)
            + dataKeys.sorted().compactMap { MessageValidator.dataKeyIssue($0, field: "message.data.\($0)") }
    }

    /// The size issue of a message whose compact encoding is `encodedCount` bytes and whose
    /// target member is `target`: the same figure as `validate(message:)` without encoding again.
    /// (Keys are written sorted and a message has `data` besides its target, so dropping the
    /// target drops exactly `"key":"value"` and one comma.)
    public func sizeIssues(encodedCount: Int, target: (key: String, value: String)) -> [ContractIssue] {
        var member: [UInt8] = []
        JSONValue.writeString(target.key, to: &member)
        JSONValue.writeString(target.value, to: &member)
        return sizeIssues(payloadBytes: encodedCount - member.count - 2, isTopic: target.key != "token")
    }

    /// Issues of option sections alone (an App ID's extra options, a job's options).
    public func validateSections(_ sections: [String: JSONValue], path: String) -> [ContractIssue] {
        FCMMessageSchema.optionSections.check(sections, path: path) + ruleIssues(sections, path: path)
    }

    /// The issue with one data key, if any: empty, or reserved by FCM.
    public static func dataKeyIssue(_ key: String, field: String) -> ContractIssue? {
        if key.isEmpty { return ContractIssue(.reservedDataKey, field: field, "data keys must not be empty") }
        if key == "from" || key == "message_type" || key.hasPrefix("google.") || key.hasPrefix("gcm.") {
            return ContractIssue(.reservedDataKey, field: field,
                                 "\"\(key)\" is reserved by FCM (from, message_type, google.*, gcm.*); use a pushdata.* key")
        }
        return nil
    }

    private func dataKeyIssues(_ data: [String: JSONValue], path: String) -> [ContractIssue] {
        data.keys.sorted().compactMap { MessageValidator.dataKeyIssue($0, field: "\(path).\($0)") }
    }

    private func targetIssues(_ m: [String: JSONValue]) -> [ContractIssue] {
        let present = ["token", "topic", "condition"].filter { m[$0] != nil }
        guard present.count == 1 else {
            return [ContractIssue(.targetCount, field: "message", "exactly one of token, topic, condition is required, got \(present.count)")]
        }
        for key in present {
            if let value = m[key]?.stringValue { return targetValueIssues(key: key, value: value) }
        }
        return []
    }

    private func targetValueIssues(key: String, value: String) -> [ContractIssue] {
        switch key {
        case "token":
            let token = value
            if token.isEmpty || token.utf8.count > 4096 || token.utf8.contains(where: { $0 <= 0x20 }) {
                return [ContractIssue(.invalidToken, field: "message.token", "must be a non-empty registration token without spaces")]
            }
        case "topic":
            let topic = value
            if topic.hasPrefix("/topics/") {
                return [ContractIssue(.topicName, field: "message.topic", "give the topic name without the /topics/ prefix")]
            }
            if topic.isEmpty || !topic.utf8.allSatisfy(MessageValidator.isTopicByte) {
                return [ContractIssue(.topicName, field: "message.topic", "must match [a-zA-Z0-9-_.~%]+, got \"\(topic)\"")]
            }
        case "condition":
            let condition = value
            let topics = condition.split(separator: "in topics", omittingEmptySubsequences: false).count - 1
            if condition.isEmpty || topics == 0 {
                return [ContractIssue(.condition, field: "message.condition", "must combine topics, e.g. 'a' in topics && 'b' in topics")]
            }
            if topics > maxConditionTopics {
                return [ContractIssue(.condition, field: "message.condition", "\(topics) topics; FCM allows at most \(maxConditionTopics)")]
            }
        default:
            break
        }
        return []
    }

    private func imageAndRuleIssues(_ m: [String: JSONValue]) -> [ContractIssue] {
        var issues: [ContractIssue] = []
        if let image = m["notification"]?["image"]?.stringValue, !isHTTPS(image) {
            issues.append(ContractIssue(.imageURL, field: "message.notification.image", "must be an https:// URL"))
        }
        return issues + ruleIssues(m, path: "message")
    }

    /// Value rules of the option sections, at `path` (`message` or an options prefix).
    private func ruleIssues(_ m: [String: JSONValue], path: String) -> [ContractIssue] {
        var issues: [ContractIssue] = []
        let labels = [("fcm_options", m["fcm_options"]?["analytics_label"]),
                      ("android.fcm_options", m["android"]?["fcm_options"]?["analytics_label"]),
                      ("apns.fcm_options", m["apns"]?["fcm_options"]?["analytics_label"]),
                      ("webpush.fcm_options", m["webpush"]?["fcm_options"]?["analytics_label"])]
        for case let (at, .string(label)?) in labels
        where label.isEmpty || label.utf8.count > 50 || !label.utf8.allSatisfy(MessageValidator.isTopicByte) {
            issues.append(ContractIssue(.analyticsLabel, field: "\(path).\(at).analytics_label",
                                        "must match [a-zA-Z0-9-_.~%]{1,50}, got \"\(label)\""))
        }
        if let android = m["android"]?.objectValue {
            if case .string(let ttl)? = android["ttl"], MessageValidator.durationSeconds(ttl).map({ $0 <= MessageValidator.maxTTLSeconds }) != true {
                issues.append(ContractIssue(.androidTTL, field: "\(path).android.ttl",
                                            "must be a duration such as \"86400s\" between 0s and 2419200s, got \"\(ttl)\""))
            }
            if case .string(let p)? = android["priority"], !["normal", "high", "NORMAL", "HIGH"].contains(p) {
                issues.append(ContractIssue(.androidPriority, field: "\(path).android.priority", "must be \"normal\" or \"high\", got \"\(p)\""))
            }
            if let data = android["data"]?.objectValue { issues += dataKeyIssues(data, path: "\(path).android.data") }
            if case .string(let image)? = android["notification"]?["image"], !isHTTPS(image) {
                issues.append(ContractIssue(.imageURL, field: "\(path).android.notification.image", "must be an https:// URL"))
            }
            if let notification = android["notification"]?.objectValue {
                issues += FCMFieldRules.androidNotificationIssues(notification, path: "\(path).android.notification")
            }
        }
        if let apns = m["apns"]?.objectValue { issues += FCMFieldRules.apnsIssues(apns, path: "\(path).apns") }
        if let webpush = m["webpush"]?.objectValue { issues += FCMFieldRules.webpushIssues(webpush, path: "\(path).webpush") }
        if case .string(let image)? = m["apns"]?["fcm_options"]?["image"], !isHTTPS(image) {
            issues.append(ContractIssue(.imageURL, field: "\(path).apns.fcm_options.image", "must be an https:// URL"))
        }
        if case .string(let link)? = m["webpush"]?["fcm_options"]?["link"], !isHTTPS(link) {
            issues.append(ContractIssue(.webpushLink, field: "\(path).webpush.fcm_options.link", "must be an https:// URL"))
        }
        return issues
    }

    private func sizeIssues(_ m: [String: JSONValue]) -> [ContractIssue] {
        var payload = m
        let isTopic = payload.removeValue(forKey: "topic") != nil || payload.removeValue(forKey: "condition") != nil
        payload.removeValue(forKey: "token")
        return sizeIssues(payloadBytes: JSONValue.object(payload).encodedBytes().count, isTopic: isTopic)
    }

    private func sizeIssues(payloadBytes size: Int, isTopic: Bool) -> [ContractIssue] {
        let limit = isTopic ? maxTopicPayloadBytes : maxPayloadBytes
        guard size > limit else { return [] }
        return [ContractIssue(.payloadTooLarge, field: "message",
                              "payload is \(size) bytes; FCM allows \(limit)\(isTopic ? " for topic messages" : "")")]
    }

    private func isHTTPS(_ url: String) -> Bool {
        url.count > 8 && url.lowercased().hasPrefix("https://")
    }

    static func isTopicByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%"):
            return true
        default:
            return false
        }
    }

    /// Seconds of a protobuf Duration string ("3.5s", "86400s"); nil if malformed or negative.
    public static func durationSeconds(_ text: String) -> Double? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard !number.isEmpty, parts.count <= 2,
              parts[0].allSatisfy(\.isASCIIDigitCharacter), !parts[0].isEmpty,
              parts.count == 1 || (1...9).contains(parts[1].count) && parts[1].allSatisfy(\.isASCIIDigitCharacter)
        else { return nil }
        return Double(number)
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
