/// What a user did with a notification, as apps report it.
public enum PushEventType: String, Sendable, CaseIterable {
    case receive, open, click, dismiss
}

/// An app event carried on `push.events` (contract: docs/contracts.md), linked to its
/// notification by `mn_message_id`.
public struct PushEvent: Sendable, Equatable {
    public var eventType: PushEventType
    public var mnMessageID: String
    public var appID: String?
    public var occurredAt: Timestamp?
    /// The app's own id for this event, if it sends one; used to count a resent event once.
    public var eventID: String?

    public init(eventType: PushEventType, mnMessageID: String, appID: String? = nil, occurredAt: Timestamp? = nil, eventID: String? = nil) {
        self.eventType = eventType
        self.mnMessageID = mnMessageID
        self.appID = appID
        self.occurredAt = occurredAt
        self.eventID = eventID
    }

    /// Reads and validates one event.
    public static func decode(_ json: JSONValue, path: String = "") throws(ContractError) -> PushEvent {
        guard case .object(let object) = json else {
            throw ContractError(document: "event", issues: [ContractIssue(.wrongType, field: path.isEmpty ? "$" : path, "must be an object")])
        }
        var r = FieldReader(object, path: path)
        let typeRaw = r.requiredString("event_type", maxLength: 32)
        let type = typeRaw.flatMap(PushEventType.init(rawValue:))
        if let typeRaw, type == nil {
            r.report(ContractIssue(.invalidValue, field: r.fieldPath("event_type"),
                                   "must be one of \(PushEventType.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(typeRaw)\""))
        }
        let id = r.requiredString("mn_message_id", maxLength: 128)
        if let id, !MessageID.isWellFormed(id) {
            r.report(ContractIssue(.messageID, field: r.fieldPath("mn_message_id"), "must look like mnid2m.N.N.N.N.N"))
        }
        let appID = r.optionalString("app_id", maxLength: 128)
        if let appID, let issue = IdentifierRules.appIDIssue(appID, field: r.fieldPath("app_id")) { r.report(issue) }  // the job's rule
        let occurredAt = r.optionalTimestamp("occurred_at")
        let eventID = r.optionalString("event_id", maxLength: 128)
        guard r.issues.isEmpty, let type, let id else { throw ContractError(document: "event", issues: r.issues) }
        return PushEvent(eventType: type, mnMessageID: id, appID: appID, occurredAt: occurredAt, eventID: eventID)
    }

    /// The event as contract JSON.
    public func encoded() -> JSONValue {
        var o: [String: JSONValue] = ["event_type": .string(eventType.rawValue), "mn_message_id": .string(mnMessageID)]
        if let appID { o["app_id"] = .string(appID) }
        if let occurredAt { o["occurred_at"] = .string(occurredAt.description) }
        if let eventID { o["event_id"] = .string(eventID) }
        return .object(o)
    }
}
