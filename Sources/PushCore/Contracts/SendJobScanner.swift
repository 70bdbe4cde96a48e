/// Reads the common shape of a send job straight from its bytes, without building a JSON tree:
/// `recipients` as the target, no `options`, every field known, present once and valid.
///
/// It never decides that a job is wrong: on anything else (a topic or condition, `options`, an
/// unknown, repeated or null field, any value the full decoder would refuse, JSON that does not
/// parse) it answers nil, and `SendJob.decode` reads the job again through the JSON tree and
/// `FieldReader`, which word the issues. What it accepts, it accepts with the full decoder's
/// checks and gives the same job (pinned by `SendJobScannerTests` and the `job` fuzz reader).
struct SendJobScanner {
    private var parser: JSONParser

    private init(buffer: UnsafeBufferPointer<UInt8>) {
        parser = JSONParser(buffer: buffer, maxDepth: 64)
    }

    /// The job in `bytes`, or nil when it is not of the common shape.
    static func scan<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> SendJob? {
        if let job = bytes.withContiguousStorageIfAvailable({ scan(buffer: $0) }) { return job }
        return Array(bytes).withUnsafeBufferPointer { scan(buffer: $0) }
    }

    private static func scan(buffer: UnsafeBufferPointer<UInt8>) -> SendJob? {
        var scanner = SendJobScanner(buffer: buffer)
        return try? scanner.job()
    }

    /// Not of the common shape: the full decoder reads the job.
    private struct Elsewhere: Error {}

    private mutating func job() throws -> SendJob {
        var seen = Seen()
        var jobID: String?, appID: String?, messageType: MessageType?, notification: NotificationContent?
        var data: [String: String] = [:], recipients: [Recipient]?, mnMessageID: String?
        var validateOnly = false, notAfter: Timestamp?, campaign: String?, priority = JobPriority.normal
        try expect(UInt8(ascii: "{"))
        var first = true
        while let key = try nextKey(first: &first) {
            switch key {
            case "schema_version":
                try seen.once(0)
                guard case .int(let v) = try parser.parseValue(), v >= 1, v <= SendJob.schemaVersion else { throw Elsewhere() }
            case "job_id":
                try seen.once(1)
                jobID = try string(maxLength: SendJob.MaxBytes.jobID, allowEmpty: false)
            case "app_id":
                try seen.once(2)
                let id = try string(maxLength: SendJob.MaxBytes.appID, allowEmpty: false)
                guard IdentifierRules.appIDProblem(id) == nil else { throw Elsewhere() }
                appID = id
            case "message_type":
                try seen.once(3)
                guard let type = MessageType(rawValue: try string(maxLength: SendJob.MaxBytes.messageType)) else { throw Elsewhere() }
                messageType = type
            case "notification":
                try seen.once(4)
                notification = try notificationContent()
            case "data":
                try seen.once(5)
                data = try stringMap()
            case "recipients":
                try seen.once(6)
                recipients = try recipientList()
            case "mn_message_id":
                try seen.once(7)
                let id = try string(maxLength: SendJob.MaxBytes.mnMessageID)
                guard MessageID.isWellFormed(id) else { throw Elsewhere() }
                mnMessageID = id
            case "validate_only":
                try seen.once(8)
                guard case .bool(let b) = try parser.parseValue() else { throw Elsewhere() }
                validateOnly = b
            case "not_after":
                try seen.once(9)
                guard let t = Timestamp(rfc3339: try string(maxLength: FieldReader.timestampMaxBytes)) else { throw Elsewhere() }
                notAfter = t
            case "campaign":
                try seen.once(10)
                campaign = try string(maxLength: SendJob.MaxBytes.campaign)
            case "priority":
                try seen.once(11)
                guard let value = JobPriority(rawValue: try string(maxLength: 16)) else { throw Elsewhere() }
                priority = value
            default:
                throw Elsewhere()  // options, topic, condition, or a field this build does not know
            }
        }
        parser.skipWhitespace()
        guard parser.index == parser.buffer.count, let jobID, let appID, let recipients else { throw Elsewhere() }
        if mnMessageID != nil, recipients.count > 1 { throw Elsewhere() }
        return SendJob(jobID: jobID, appID: appID, messageType: messageType, notification: notification, data: data,
                       target: .recipients(recipients), mnMessageID: mnMessageID, validateOnly: validateOnly,
                       notAfter: notAfter, campaign: campaign, priority: priority)
    }

    private mutating func notificationContent() throws -> NotificationContent {
        var seen = Seen()
        var content = NotificationContent()
        try expect(UInt8(ascii: "{"))
        var first = true
        while let key = try nextKey(first: &first) {
            switch key {
            case "title":
                try seen.once(0)
                content.title = try string(maxLength: SendJob.MaxBytes.title)
            case "body":
                try seen.once(1)
                content.body = try string(maxLength: SendJob.MaxBytes.body)
            case "image":
                try seen.once(2)
                content.image = try string(maxLength: SendJob.MaxBytes.image)
            default:
                throw Elsewhere()
            }
        }
        return content
    }

    private mutating func recipientList() throws -> [Recipient] {
        var list: [Recipient] = []
        try expect(UInt8(ascii: "["))
        var first = true
        while try nextElement(first: &first) {
            guard list.count < SendJob.maxRecipients else { throw Elsewhere() }
            var seen = Seen()
            var token: String?, id: String?, data: [String: String] = [:]
            try expect(UInt8(ascii: "{"))
            var firstKey = true
            while let key = try nextKey(first: &firstKey) {
                switch key {
                case "token":
                    try seen.once(0)
                    token = try string(maxLength: SendJob.MaxBytes.token, allowEmpty: true)
                case "mn_message_id":
                    try seen.once(1)
                    let value = try string(maxLength: SendJob.MaxBytes.mnMessageID)
                    guard MessageID.isWellFormed(value) else { throw Elsewhere() }
                    id = value
                case "data":
                    try seen.once(2)
                    data = try stringMap()
                default:
                    throw Elsewhere()
                }
            }
            guard let token else { throw Elsewhere() }
            list.append(Recipient(token: token, mnMessageID: id, data: data))
        }
        guard !list.isEmpty else { throw Elsewhere() }
        return list
    }

    /// A string → string object; a repeated name goes to the full decoder, which refuses it.
    private mutating func stringMap() throws -> [String: String] {
        var map: [String: String] = [:]
        try expect(UInt8(ascii: "{"))
        var first = true
        while let key = try nextKey(first: &first) {
            guard map[key] == nil else { throw Elsewhere() }
            map[key] = try string(maxLength: Int.max)
        }
        return map
    }

    // MARK: JSON steps (any surprise throws `Elsewhere`)

    /// A string of at most `maxLength` UTF-8 bytes (FieldReader's rule).
    private mutating func string(maxLength: Int, allowEmpty: Bool = true) throws -> String {
        parser.skipWhitespace()
        guard peek == UInt8(ascii: "\"") else { throw Elsewhere() }
        let text = try parser.parseString()
        guard allowEmpty || !text.isEmpty, text.utf8.count <= maxLength else { throw Elsewhere() }
        return text
    }

    private mutating func expect(_ byte: UInt8) throws {
        parser.skipWhitespace()
        guard peek == byte else { throw Elsewhere() }
        parser.index += 1
    }

    /// The next key of the object whose `{` was read, positioned at its value; nil after `}`.
    private mutating func nextKey(first: inout Bool) throws -> String? {
        parser.skipWhitespace()
        if peek == UInt8(ascii: "}") {
            parser.index += 1
            return nil
        }
        if !first {
            guard peek == UInt8(ascii: ",") else { throw Elsewhere() }
            parser.index += 1
            parser.skipWhitespace()
        }
        first = false
        guard peek == UInt8(ascii: "\"") else { throw Elsewhere() }
        let key = try parser.parseString()
        try expect(UInt8(ascii: ":"))
        return key
    }

    /// True when another element of the array whose `[` was read follows; false after `]`.
    private mutating func nextElement(first: inout Bool) throws -> Bool {
        parser.skipWhitespace()
        if peek == UInt8(ascii: "]") {
            parser.index += 1
            return false
        }
        if !first {
            guard peek == UInt8(ascii: ",") else { throw Elsewhere() }
            parser.index += 1
        }
        first = false
        return true
    }

    private var peek: UInt8? { parser.index < parser.buffer.count ? parser.buffer[parser.index] : nil }

    /// The fields of one object already read: a repeated one sends the job to the full decoder.
    private struct Seen {
        private var bits: UInt16 = 0
        mutating func once(_ field: UInt16) throws {
            guard bits & (1 << field) == 0 else { throw Elsewhere() }
            bits |= 1 << field
        }
    }
}
