/// A job whose shared part (App ID defaults merged with the job's fields) is built and checked
/// once, so that its targets can be composed one at a time, each only when it is about to be
/// sent: a 1 000-recipient job never holds 1 000 request bodies at once.
///
/// `compose(i)` gives exactly what composing the whole job gives for target `i`: the same bytes,
/// the same issues in the same order. When the shared part is clean, a recipient's message is
/// checked only for what it adds (its target, its own data keys, the size); otherwise the whole
/// message is checked as before (and is invalid anyway).
public struct PreparedJob: Sendable {
    public let job: SendJob
    let validator: MessageValidator
    /// Everything but `data` and the target.
    let message: [String: JSONValue]
    /// App ID default payload < job data.
    let data: [String: String]
    let sharedIsClean: Bool

    /// Recipients, or 1 for a topic or condition.
    public var targetCount: Int { job.target.count }

    /// The outcome for target `index` (0..<targetCount).
    public func compose(_ index: Int) -> CompositionOutcome {
        let target: (key: String, value: String)
        var recipientData: [String: String] = [:]
        switch job.target {
        case .recipients(let list):
            target = ("token", list[index].token)
            recipientData = list[index].data
        case .topic(let topic): target = ("topic", topic)
        case .condition(let condition): target = ("condition", condition)
        }
        let id = MessageID.resolve(job: job, recipientIndex: index)
        var data = recipientData.isEmpty ? self.data : self.data.merging(recipientData) { _, r in r }
        data["mn_message_id"] = id
        var message = self.message
        message["data"] = .object(data.mapValues(JSONValue.string))
        message[target.key] = .string(target.value)
        let value = JSONValue.object(message)
        var issues = sharedIsClean ? validator.recipientIssues(target: target, dataKeys: recipientData.keys)
            : validator.validate(message: value)
        guard issues.isEmpty else { return .invalid(recipientIndex: index, mnMessageID: id, issues: issues) }
        let encoded = value.encodedBytes()
        issues = validator.sizeIssues(encodedCount: encoded.count, target: target)
        guard issues.isEmpty else { return .invalid(recipientIndex: index, mnMessageID: id, issues: issues) }
        return .message(ComposedMessage(recipientIndex: index, mnMessageID: id, message: value,
                                        body: Self.requestBody(message: encoded, validateOnly: job.validateOnly)))
    }

    private static let bodyStart = Array(#"{"message":"#.utf8)
    private static let validateOnlyEnd = Array(#","validate_only":true}"#.utf8)

    /// `{"message":…}` or `{"message":…,"validate_only":true}` around an encoded message: the
    /// bytes `JSONValue.encodedBytes()` writes for that object (keys sorted, compact), without
    /// encoding the message twice.
    static func requestBody(message: [UInt8], validateOnly: Bool) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(bodyStart.count + message.count + validateOnlyEnd.count)
        body += bodyStart
        body += message
        if validateOnly { body += validateOnlyEnd } else { body.append(UInt8(ascii: "}")) }
        return body
    }
}

extension CompositionOutcome {
    /// The outcome without its request (message and body emptied): what planning reads once the
    /// message was sent (its recipient index and `mn_message_id`), kept in place of the body.
    public var settled: CompositionOutcome {
        guard case .message(let m) = self else { return self }
        return .message(ComposedMessage(recipientIndex: m.recipientIndex, mnMessageID: m.mnMessageID, message: .null, body: []))
    }
}
