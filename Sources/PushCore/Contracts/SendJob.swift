/// The two kinds of push message of the seed document.
/// How soon a job must go: `high` jobs (one-time codes, password resets, order updates) are
/// published with the routing key `job.high` to their own queue and never wait behind the
/// `normal` backlog of campaigns (docs/contracts.md, "Priority").
public enum JobPriority: String, Sendable, Equatable {
    case normal, high
}

/// The message type a job asks for.
public enum MessageType: String, Sendable, Equatable {
    /// Notification + Data (the default): shown by the OS, with a data payload for the app.
    case notification
    /// Data-only: a silent message the app handles itself.
    case data
}

/// The visible part of a Notification + Data message, as set in the communication editor.
public struct NotificationContent: Sendable, Equatable {
    public var title: String?
    public var body: String?
    public var image: String?

    public init(title: String? = nil, body: String? = nil, image: String? = nil) {
        self.title = title
        self.body = body
        self.image = image
    }
}

/// One device of a job: its registration token, optionally its own tracking id and data.
public struct Recipient: Sendable, Equatable {
    public var token: String
    public var mnMessageID: String?
    public var data: [String: String]

    public init(token: String, mnMessageID: String? = nil, data: [String: String] = [:]) {
        self.token = token
        self.mnMessageID = mnMessageID
        self.data = data
    }
}

/// Where a job goes: a list of devices, a topic, or a topic condition (exactly one).
public enum JobTarget: Sendable, Equatable {
    case recipients([Recipient])
    case topic(String)
    case condition(String)

    /// FCM requests the target takes: one per recipient, one for a topic or a condition.
    public var count: Int {
        if case .recipients(let list) = self { return list.count }
        return 1
    }

    /// The FCM message member that names target `index` (0..<count): `token`, `topic` or
    /// `condition`, and its value. The one place that maps a target onto FCM's names (the
    /// composer's request and the planner's results both read it).
    public func member(_ index: Int) -> (key: String, value: String) {
        switch self {
        case .recipients(let list): ("token", list[index].token)
        case .topic(let topic): ("topic", topic)
        case .condition(let condition): ("condition", condition)
        }
    }
}

/// A send job as upstream publishes it on `push.jobs` (contract: docs/contracts.md, schema 1).
public struct SendJob: Sendable, Equatable {
    /// The highest `schema_version` this build reads.
    public static let schemaVersion = 1
    /// The most recipients one job may carry; larger sends are split upstream.
    public static let maxRecipients = 1000

    /// The longest value, in UTF-8 bytes, of each string field: one table for the job's two
    /// readers, the full decoder and `SendJobScanner`, which must accept the same jobs.
    enum MaxBytes {
        static let jobID = 128
        static let appID = 128
        static let messageType = 32
        static let title = 4096
        static let body = 4096
        static let image = 2048
        static let topic = 900
        static let condition = 2048
        static let mnMessageID = 128
        static let campaign = 256
        static let token = 4096
    }

    public var jobID: String
    public var appID: String
    /// nil: the App ID's default message type.
    public var messageType: MessageType?
    public var notification: NotificationContent?
    public var data: [String: String]
    public var target: JobTarget
    /// The job's `mn_message_id`, for a job with a single target (a topic, a condition, one recipient).
    public var mnMessageID: String?
    /// Per-job overrides of `android`, `apns`, `webpush`, `fcm_options` (deep-merged over the App ID's).
    public var options: [String: JSONValue]
    public var validateOnly: Bool
    public var notAfter: Timestamp?
    public var campaign: String?
    /// `"priority"`, `normal` when absent; it travels with the job through retries and dead letters.
    public var priority: JobPriority

    public init(jobID: String, appID: String, messageType: MessageType? = nil, notification: NotificationContent? = nil,
                data: [String: String] = [:], target: JobTarget, mnMessageID: String? = nil,
                options: [String: JSONValue] = [:], validateOnly: Bool = false, notAfter: Timestamp? = nil,
                campaign: String? = nil, priority: JobPriority = .normal) {
        self.jobID = jobID
        self.appID = appID
        self.messageType = messageType
        self.notification = notification
        self.data = data
        self.target = target
        self.mnMessageID = mnMessageID
        self.options = options
        self.validateOnly = validateOnly
        self.notAfter = notAfter
        self.campaign = campaign
        self.priority = priority
    }

    /// The sections of `options` (and of an App ID's extra options) the composer knows.
    public static let optionSections = ["android", "apns", "webpush", "fcm_options"]
}
