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
        if job.options.isEmpty {  // the common case: the App ID's sections, encoded once per configuration
            let data = Self.data(of: job, app: app)
            let notification = type == .notification ? job.notification : nil
            if app.sections.areClean(for: type),
               validator.ownMembersAreClean(dataKeys: data.keys, notificationImage: notification?.image) {
                return PreparedJob(job: job, validator: validator, data: data, appMembers: app.sections.encodedMembers(for: type),
                                   notification: notification)
            }
        }
        let shared = sharedSections(job, app: app, type: type)
        return PreparedJob(job: job, validator: validator, message: shared.message, data: shared.data,
                           sharedIsClean: sharedIsClean(job, app: app, type: type, shared: shared))
    }

    /// Whether the shared part has no issue. Without job options its sections are the App ID's,
    /// checked once per configuration (`AppSections`): only the job's own members are checked.
    private func sharedIsClean(_ job: SendJob, app: AppConfiguration, type: MessageType,
                               shared: (message: [String: JSONValue], data: [String: String])) -> Bool {
        guard job.options.isEmpty else {
            var probe = shared.message
            probe["data"] = .object(shared.data.mapValues(JSONValue.string))
            return validator.sharedIssues(message: probe).isEmpty
        }
        guard app.sections.areClean(for: type) else { return false }
        let image = type == .notification ? job.notification?.image : nil
        return validator.ownMembersAreClean(dataKeys: shared.data.keys, notificationImage: image)
    }

    /// Everything but `data` and the target: the same for every recipient of the job.
    private func sharedSections(_ job: SendJob, app: AppConfiguration, type: MessageType) -> (message: [String: JSONValue], data: [String: String]) {
        var message = job.options.isEmpty ? app.sections.sections(for: type)
            : AppSections.merged(base: app.extraOptions, overlay: job.options, type: type)
        if type == .notification, let n = job.notification {
            var o: [String: JSONValue] = [:]
            if let t = n.title { o["title"] = .string(t) }
            if let b = n.body { o["body"] = .string(b) }
            if let i = n.image { o["image"] = .string(i) }
            message["notification"] = .object(o)
        }
        return (message, Self.data(of: job, app: app))
    }

    /// App ID default payload < job data.
    private static func data(of job: SendJob, app: AppConfiguration) -> [String: String] {
        job.data.isEmpty ? app.defaultPayload : app.defaultPayload.merging(job.data) { _, job in job }
    }
}
