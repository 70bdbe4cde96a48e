extension SendJob {
    /// Reads a send job from the bytes of an AMQP message body; every issue is reported at once.
    /// The common shape is read straight from the bytes (`SendJobScanner`); anything else goes
    /// through the JSON tree (`decodeThroughTree`), which gives the same job or words the issues.
    public static func decode<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ContractError) -> SendJob {
        if let job = SendJobScanner.scan(bytes) { return job }
        return try decodeThroughTree(bytes)
    }

    /// The full decoder: the bytes parsed into a JSON tree, read field by field.
    static func decodeThroughTree<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ContractError) -> SendJob {
        let json: JSONValue
        do {
            json = try JSONValue.parse(bytes)
        } catch {
            throw ContractError(document: "send job", issues: [ContractIssue(.notJSON, field: "$", error.description)])
        }
        return try decode(json)
    }

    /// Reads a send job from parsed JSON. Unknown fields are ignored (forward compatibility).
    public static func decode(_ json: JSONValue) throws(ContractError) -> SendJob {
        guard case .object(let object) = json else {
            throw ContractError(document: "send job",
                                issues: [ContractIssue(.wrongType, field: "$", "a job must be a JSON object, got \(json.kindDescription)")])
        }
        var r = FieldReader(object, path: "")
        r.schemaVersion(supported: SendJob.schemaVersion)
        let jobID = r.requiredString("job_id", maxLength: MaxBytes.jobID)
        let appID = r.requiredString("app_id", maxLength: MaxBytes.appID)
        if let appID, let issue = IdentifierRules.appIDIssue(appID, field: "app_id") { r.report(issue) }

        var messageType: MessageType?
        if let raw = r.optionalString("message_type", maxLength: MaxBytes.messageType) {
            messageType = MessageType(rawValue: raw)
            if messageType == nil {
                r.report(ContractIssue(.invalidValue, field: "message_type", "must be \"notification\" or \"data\", got \"\(raw)\""))
            }
        }

        var notification: NotificationContent?
        if let n = r.optionalObject("notification") {
            var nr = FieldReader(n, path: "notification")
            notification = NotificationContent(title: nr.optionalString("title", maxLength: MaxBytes.title),
                                               body: nr.optionalString("body", maxLength: MaxBytes.body),
                                               image: nr.optionalString("image", maxLength: MaxBytes.image))
            r.report(contentsOf: nr.issues)
        }
        let data = r.optionalStringMap("data") ?? [:]

        let recipientsJSON = r.optionalArray("recipients")
        let topic = r.optionalString("topic", maxLength: MaxBytes.topic)
        let condition = r.optionalString("condition", maxLength: MaxBytes.condition)
        let targetCount = (recipientsJSON == nil ? 0 : 1) + (topic == nil ? 0 : 1) + (condition == nil ? 0 : 1)
        var target: JobTarget?
        if targetCount != 1 {
            r.report(ContractIssue(.targetCount, field: "recipients|topic|condition",
                                   "exactly one of recipients, topic or condition is required, got \(targetCount)"))
        } else if let topic {
            target = .topic(topic)
        } else if let condition {
            target = .condition(condition)
        } else if let recipientsJSON {
            target = .recipients(decodeRecipients(recipientsJSON, reader: &r))
        }

        let mnMessageID = r.optionalString("mn_message_id", maxLength: MaxBytes.mnMessageID)
        if mnMessageID != nil, case .recipients(let list)? = target, list.count > 1 {
            r.report(ContractIssue(.messageID, field: "mn_message_id",
                                   "a job-level mn_message_id needs a single target; give each recipient its own"))
        }
        if let mnMessageID, !MessageID.isWellFormed(mnMessageID) {
            r.report(ContractIssue(.messageID, field: "mn_message_id", "must look like mnid2m.N.N.N.N.N, got \"\(mnMessageID)\""))
        }

        var options: [String: JSONValue] = [:]
        if let o = r.optionalObject("options") {
            for (section, value) in o {
                guard SendJob.optionSections.contains(section) else {
                    r.report(ContractIssue(.unknownField, field: "options.\(section)",
                                           "unknown section (known: \(SendJob.optionSections.joined(separator: ", ")))"))
                    continue
                }
                guard case .object = value else {
                    r.report(ContractIssue(.wrongType, field: "options.\(section)", "must be an object, got \(value.kindDescription)"))
                    continue
                }
                options[section] = value
            }
        }
        let validateOnly = r.optionalBool("validate_only") ?? false
        let notAfter = r.optionalTimestamp("not_after")
        let campaign = r.optionalString("campaign", maxLength: MaxBytes.campaign)
        var priority = JobPriority.normal
        if let raw = r.optionalString("priority", maxLength: 16) {
            if let value = JobPriority(rawValue: raw) {
                priority = value
            } else {
                r.report(ContractIssue(.invalidValue, field: "priority", "must be \"normal\" or \"high\", got \"\(raw)\""))
            }
        }

        guard r.issues.isEmpty, let jobID, let appID, let target else {
            throw ContractError(document: "send job", issues: r.issues)
        }
        return SendJob(jobID: jobID, appID: appID, messageType: messageType, notification: notification, data: data,
                       target: target, mnMessageID: mnMessageID, options: options, validateOnly: validateOnly,
                       notAfter: notAfter, campaign: campaign, priority: priority)
    }

    private static func decodeRecipients(_ list: [JSONValue], reader r: inout FieldReader) -> [Recipient] {
        if list.isEmpty {
            r.report(ContractIssue(.targetCount, field: "recipients", "must hold at least one recipient"))
        }
        if list.count > SendJob.maxRecipients {
            r.report(ContractIssue(.tooManyRecipients, field: "recipients",
                                   "\(list.count) recipients; a job carries at most \(SendJob.maxRecipients)"))
            return []
        }
        var recipients: [Recipient] = []
        recipients.reserveCapacity(list.count)
        for (_, path, o) in r.objectElements(list, path: "recipients") {
            var rr = FieldReader(o, path: path)
            // An empty token is the recipient's problem, not the job's: it is rejected alone
            // (INVALID_TOKEN, at composition), like a token with spaces.
            let token = rr.requiredString("token", maxLength: MaxBytes.token, allowEmpty: true)
            let id = rr.optionalString("mn_message_id", maxLength: MaxBytes.mnMessageID)
            if let id, !MessageID.isWellFormed(id) {
                rr.report(ContractIssue(.messageID, field: "\(path).mn_message_id", "must look like mnid2m.N.N.N.N.N, got \"\(id)\""))
            }
            let data = rr.optionalStringMap("data") ?? [:]
            r.report(contentsOf: rr.issues)
            if let token { recipients.append(Recipient(token: token, mnMessageID: id, data: data)) }
        }
        return recipients
    }
}
