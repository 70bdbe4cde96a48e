/// One FCM HTTP v1 request the worker would send: for a recipient, or for the topic / condition.
public struct ComposedMessage: Sendable, Equatable {
    /// The recipient's position in the job (0 for a topic or condition).
    public var recipientIndex: Int
    public var mnMessageID: String
    /// The full request body `{"message": …, "validate_only": …}`, compact JSON.
    public var body: [UInt8]

    public init(recipientIndex: Int, mnMessageID: String, body: [UInt8]) {
        self.recipientIndex = recipientIndex
        self.mnMessageID = mnMessageID
        self.body = body
    }

    /// The `message` object, read back from `body` (tools and tests; the worker sends `body` as
    /// it is). `.null` once the body was dropped (`CompositionOutcome.settled`).
    public var message: JSONValue { (try? JSONValue.parse(body))?["message"] ?? .null }
}

/// What composing one target gave: a message to send, or the FCM limits it breaks.
public enum CompositionOutcome: Sendable, Equatable {
    case message(ComposedMessage)
    /// Resending cannot help: the recipient's result is `rejected` with these issues.
    case invalid(recipientIndex: Int, mnMessageID: String, issues: [ContractIssue])
}

/// Builds FCM messages from a job and its App ID, exactly as the seed document describes.
///
/// Precedence, lowest first: `data` = App ID default payload < job `data` < recipient `data` <
/// `mn_message_id`; `android`, `apns`, `webpush`, `fcm_options` = App ID extra options < job
/// `options` (deep merge). A data-only message carries no `notification`, and its `apns` section
/// always ends with `apns-priority: 5`, `apns-push-type: background` and `content-available: 1`
/// (APNs refuses priority 10 for background pushes), whatever the App ID says.
public struct MessageComposer: Sendable {
    public var validator: MessageValidator

    public init(validator: MessageValidator = MessageValidator()) {
        self.validator = validator
    }

    /// Issues that make the whole job unsendable (the job goes to the DLQ as `INVALID_JOB`).
    public func jobIssues(_ job: SendJob, app: AppConfiguration) -> [ContractIssue] {
        var issues: [ContractIssue] = []
        let type = job.messageType ?? app.defaultMessageType
        if type == .data, job.notification != nil {
            issues.append(ContractIssue(.messageTypeConflict, field: "notification",
                                        "a data-only job must not carry notification fields (drop them or use message_type \"notification\")"))
        }
        if type == .notification, let n = job.notification, n.title == nil, n.body == nil {
            issues.append(ContractIssue(.emptyNotification, field: "notification", "needs a title or a body"))
        }
        if type == .notification, job.notification == nil {
            issues.append(ContractIssue(.emptyNotification, field: "notification",
                                        "a notification message needs notification.title or .body (or send message_type \"data\")"))
        }
        issues += job.options.isEmpty ? [] : validator.validateSections(job.options, path: "options")
        return issues
    }

    /// The outcome for every target of the job, in recipient order; throws (as `INVALID_JOB`)
    /// when the job itself is unsendable (see `jobIssues`).
    public func compose(_ job: SendJob, app: AppConfiguration) throws(ContractError) -> [CompositionOutcome] {
        let prepared = try prepare(job, app: app)
        return (0..<prepared.targetCount).map(prepared.compose)
    }

    /// The job's shared part, merged and checked once, ready to compose its targets one at a
    /// time (`PreparedJob.compose(_:)`); throws (as `INVALID_JOB`) when the job itself is
    /// unsendable (see `jobIssues`).
    public func prepare(_ job: SendJob, app: AppConfiguration) throws(ContractError) -> PreparedJob {
        let problems = jobIssues(job, app: app)
        guard problems.isEmpty else { throw ContractError(document: "send job", issues: problems) }
        let type = job.messageType ?? app.defaultMessageType
        let data = job.data.isEmpty ? app.defaultPayload : app.defaultPayload.merging(job.data) { _, job in job }
        let notification = type == .notification ? job.notification : nil
        guard job.options.isEmpty else {
            // The job's options merged into the App ID's sections: the shared part is checked whole.
            let message = Self.shared(AppSections.merged(base: app.extraOptions, overlay: job.options, type: type),
                                      notification: notification)
            var probe = message
            probe["data"] = .object(data.mapValues(JSONValue.string))
            return PreparedJob(job: job, validator: validator, message: message, data: data,
                               sharedIsClean: validator.sharedIssues(message: probe).isEmpty)
        }
        // The App ID's sections, checked and encoded once per configuration (`AppSections`): only
        // the job's own members are checked here.
        guard app.sections.areClean(for: type),
              validator.ownMembersAreClean(dataKeys: data.keys, notificationImage: notification?.image) else {
            return PreparedJob(job: job, validator: validator, message: Self.shared(app.sections.sections(for: type), notification: notification),
                               data: data, sharedIsClean: false)
        }
        return PreparedJob(job: job, validator: validator, data: data, appMembers: app.sections.encodedMembers(for: type),
                           notification: notification)
    }

    /// Everything but `data` and the target, the same for every recipient of the job: the
    /// option sections and the job's notification.
    private static func shared(_ sections: [String: JSONValue], notification: NotificationContent?) -> [String: JSONValue] {
        var message = sections
        if let n = notification {
            var o: [String: JSONValue] = [:]
            if let t = n.title { o["title"] = .string(t) }
            if let b = n.body { o["body"] = .string(b) }
            if let i = n.image { o["image"] = .string(i) }
            message["notification"] = .object(o)
        }
        return message
    }
}
