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
    /// Everything but `data` and the target, as values: read only when the shared part is not
    /// clean (empty when it came encoded, see `init(job:validator:data:appMembers:notification:)`).
    let message: [String: JSONValue]
    /// App ID default payload < job data.
    let data: [String: String]
    let sharedIsClean: Bool
    /// The shared members encoded once (`"key":value`), in the writer's key order: a recipient's
    /// message is these with its `data` and target written in between (clean shared part only).
    private let encodedMembers: [EncodedMember]
    /// Recipients that repeat an earlier recipient's token or `mn_message_id`, by index: they are
    /// rejected, the first one is sent (`RecipientDuplicates`).
    private let duplicates: [Int: ContractIssue]
    /// A recipient's message size without writing it (clean shared part only; see `MessageSize`).
    private var size: MessageSize?

    init(job: SendJob, validator: MessageValidator, message: [String: JSONValue], data: [String: String], sharedIsClean: Bool) {
        self.job = job
        duplicates = RecipientDuplicates.issues(of: job)
        self.validator = validator
        self.message = message
        self.data = data
        self.sharedIsClean = sharedIsClean
        encodedMembers = sharedIsClean ? EncodedMember.members(of: message) : []
        if sharedIsClean { size = MessageSize(shared: data, skeleton: encodeMessage(data: [:], target: (job.target.member(0).key, ""))) }
    }

    /// A clean job without options: the App ID's sections come encoded from its configuration
    /// (`AppSections.encodedMembers(for:)`); only the job's `notification` is written here.
    init(job: SendJob, validator: MessageValidator, data: [String: String], appMembers: [EncodedMember],
         notification: NotificationContent?) {
        self.job = job
        duplicates = RecipientDuplicates.issues(of: job)
        self.validator = validator
        self.message = [:]
        self.data = data
        self.sharedIsClean = true
        var members = appMembers
        if let notification {
            let member = EncodedMember(key: "notification", bytes: Self.encoded(notification))
            members.insert(member, at: members.firstIndex { $0.key > member.key } ?? members.count)
        }
        encodedMembers = members
        size = MessageSize(shared: data, skeleton: encodeMessage(data: [:], target: (job.target.member(0).key, "")))
    }

    /// `"notification":{…}` as the JSON writer puts it (keys sorted: body, image, title).
    private static func encoded(_ notification: NotificationContent) -> [UInt8] {
        var out = Array(#""notification":{"#.utf8)
        var first = true
        func write(_ key: StaticString, _ value: String?) {
            guard let value else { return }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
            out.append(contentsOf: #"":"#.utf8)
            JSONValue.writeString(value, to: &out)
        }
        write("body", notification.body)
        write("image", notification.image)
        write("title", notification.title)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Recipients, or 1 for a topic or condition.
    public var targetCount: Int { job.target.count }

    /// The outcome for target `index` (0..<targetCount).
    public func compose(_ index: Int) -> CompositionOutcome {
        let target = job.target.member(index)
        var recipientData: [String: String] = [:]
        if case .recipients(let list) = job.target { recipientData = list[index].data }
        let id = MessageID.resolve(job: job, recipientIndex: index)
        if !duplicates.isEmpty, let duplicate = duplicates[index] {
            return .invalid(recipientIndex: index, mnMessageID: id, issues: [duplicate])
        }
        let encoded: [UInt8]
        if sharedIsClean, let size {
            let issues = validator.recipientIssues(target: target, dataKeys: recipientData.keys)
            guard issues.isEmpty else { return .invalid(recipientIndex: index, mnMessageID: id, issues: issues) }
            // Sized before it is written: a message over FCM's limit is refused for the cost of
            // what the recipient adds, not of the shared part (second audit, finding 4).
            let sizeIssues = validator.sizeIssues(encodedCount: size.count(target: target.value, own: recipientData, mnMessageID: id),
                                                  target: target)
            guard sizeIssues.isEmpty else { return .invalid(recipientIndex: index, mnMessageID: id, issues: sizeIssues) }
            var data = recipientData.isEmpty ? self.data : self.data.merging(recipientData) { _, r in r }
            data["mn_message_id"] = id
            encoded = encodeMessage(data: data, target: target)
        } else {
            var data = recipientData.isEmpty ? self.data : self.data.merging(recipientData) { _, r in r }
            data["mn_message_id"] = id
            var message = self.message
            message["data"] = .object(data.mapValues(JSONValue.string))
            message[target.key] = .string(target.value)
            let value = JSONValue.object(message)
            let issues = validator.validate(message: value)
            guard issues.isEmpty else { return .invalid(recipientIndex: index, mnMessageID: id, issues: issues) }
            encoded = value.encodedBytes()
        }
        let issues = validator.sizeIssues(encodedCount: encoded.count, target: target)
        guard issues.isEmpty else { return .invalid(recipientIndex: index, mnMessageID: id, issues: issues) }
        return .message(ComposedMessage(recipientIndex: index, mnMessageID: id,
                                        body: Self.requestBody(message: encoded, validateOnly: job.validateOnly)))
    }

    /// The compact JSON `JSONValue.encodedBytes()` writes for the shared members plus `data` and
    /// the target (keys sorted), without building the message as a value.
    private func encodeMessage(data: [String: String], target: (key: String, value: String)) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(encodedMembers.reduce(64) { $0 + $1.bytes.count + 1 } + target.value.utf8.count + data.count * 48)
        var first = true
        func separate() {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
        }
        func write(_ member: (key: String, isData: Bool)) {
            separate()
            JSONValue.writeString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            guard member.isData else {
                JSONValue.writeString(target.value, to: &out)
                return
            }
            out.append(UInt8(ascii: "{"))
            for (i, pair) in data.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(pair.key, to: &out)
                out.append(UInt8(ascii: ":"))
                JSONValue.writeString(pair.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        // The two members not in `encodedMembers`, in key order ("condition" < "data" < "token" < "topic").
        let pending = target.key < "data" ? [(target.key, false), ("data", true)] : [("data", true), (target.key, false)]
        var next = 0
        for member in encodedMembers {
            while next < pending.count, pending[next].0 < member.key {
                write(pending[next])
                next += 1
            }
            separate()
            out.append(contentsOf: member.bytes)
        }
        while next < pending.count {
            write(pending[next])
            next += 1
        }
        out.append(UInt8(ascii: "}"))
        return out
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
    /// The outcome without its request (body emptied): what planning reads once the
    /// message was sent (its recipient index and `mn_message_id`), kept in place of the body.
    public var settled: CompositionOutcome {
        guard case .message(let m) = self else { return self }
        return .message(ComposedMessage(recipientIndex: m.recipientIndex, mnMessageID: m.mnMessageID, body: []))
    }
}
