extension SendJob {
    /// The job as contract JSON (schema 1): what a retry or a dead-letter copy carries, so that
    /// decoding it gives back an equal job.
    public func encoded() -> JSONValue {
        var o: [String: JSONValue] = ["job_id": .string(jobID), "app_id": .string(appID)]
        if let messageType { o["message_type"] = .string(messageType.rawValue) }
        if let notification {
            var n: [String: JSONValue] = [:]
            if let t = notification.title { n["title"] = .string(t) }
            if let b = notification.body { n["body"] = .string(b) }
            if let i = notification.image { n["image"] = .string(i) }
            o["notification"] = .object(n)
        }
        if !data.isEmpty { o["data"] = .object(data.mapValues(JSONValue.string)) }
        switch target {
        case .recipients(let list):
            o["recipients"] = .array(list.map { r in
                var ro: [String: JSONValue] = ["token": .string(r.token)]
                if let id = r.mnMessageID { ro["mn_message_id"] = .string(id) }
                if !r.data.isEmpty { ro["data"] = .object(r.data.mapValues(JSONValue.string)) }
                return .object(ro)
            })
        case .topic(let t): o["topic"] = .string(t)
        case .condition(let c): o["condition"] = .string(c)
        }
        if let mnMessageID { o["mn_message_id"] = .string(mnMessageID) }
        if !options.isEmpty { o["options"] = .object(options) }
        if validateOnly { o["validate_only"] = .bool(true) }
        if let notAfter { o["not_after"] = .string(notAfter.description) }
        if let campaign { o["campaign"] = .string(campaign) }
        if priority != .normal { o["priority"] = .string(priority.rawValue) }
        return .object(o)
    }

    /// The same job reduced to the recipients at `indices` (in that order), each carrying its
    /// resolved `mn_message_id` so that a retry keeps the ids of the first attempt.
    public func keepingRecipients(at indices: [Int]) -> SendJob {
        guard case .recipients(let list) = target else { return self }
        var copy = self
        copy.target = .recipients(indices.map { i in
            var r = list[i]
            r.mnMessageID = MessageID.resolve(job: self, recipientIndex: i)
            return r
        })
        return copy
    }
}
