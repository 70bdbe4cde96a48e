/// A machine-readable name for one rule a document broke (`MISSING_FIELD`, `TOPIC_NAME`, …).
///
/// Codes are stable strings: they appear in dead-letter headers, results and CLI output.
public struct IssueCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // Document shape.
    public static let notJSON = IssueCode(rawValue: "NOT_JSON")
    public static let missingField = IssueCode(rawValue: "MISSING_FIELD")
    public static let wrongType = IssueCode(rawValue: "WRONG_TYPE")
    public static let invalidValue = IssueCode(rawValue: "INVALID_VALUE")
    public static let unsupportedVersion = IssueCode(rawValue: "UNSUPPORTED_VERSION")
    public static let unknownField = IssueCode(rawValue: "UNKNOWN_FIELD")
    // FCM's limits.
    public static let targetCount = IssueCode(rawValue: "TARGET_COUNT")
    public static let invalidToken = IssueCode(rawValue: "INVALID_TOKEN")
    /// A recipient whose token an earlier recipient of the same job has (the first is sent).
    public static let duplicateToken = IssueCode(rawValue: "DUPLICATE_TOKEN")
    /// A recipient whose `mn_message_id` an earlier recipient of the same job has.
    public static let duplicateMessageID = IssueCode(rawValue: "DUPLICATE_MESSAGE_ID")
    public static let topicName = IssueCode(rawValue: "TOPIC_NAME")
    public static let condition = IssueCode(rawValue: "CONDITION")
    public static let dataValueNotString = IssueCode(rawValue: "DATA_VALUE_NOT_STRING")
    public static let reservedDataKey = IssueCode(rawValue: "RESERVED_DATA_KEY")
    public static let payloadTooLarge = IssueCode(rawValue: "PAYLOAD_TOO_LARGE")
    public static let analyticsLabel = IssueCode(rawValue: "ANALYTICS_LABEL")
    public static let androidTTL = IssueCode(rawValue: "ANDROID_TTL")
    public static let androidPriority = IssueCode(rawValue: "ANDROID_PRIORITY")
    public static let webpushLink = IssueCode(rawValue: "WEBPUSH_LINK")
    public static let imageURL = IssueCode(rawValue: "IMAGE_URL")
    public static let androidColor = IssueCode(rawValue: "ANDROID_COLOR")
    public static let androidNotificationPriority = IssueCode(rawValue: "ANDROID_NOTIFICATION_PRIORITY")
    public static let androidVisibility = IssueCode(rawValue: "ANDROID_VISIBILITY")
    public static let androidProxy = IssueCode(rawValue: "ANDROID_PROXY")
    public static let androidEventTime = IssueCode(rawValue: "ANDROID_EVENT_TIME")
    public static let androidVibrateTimings = IssueCode(rawValue: "ANDROID_VIBRATE_TIMINGS")
    public static let androidLightSettings = IssueCode(rawValue: "ANDROID_LIGHT_SETTINGS")
    public static let androidNotificationCount = IssueCode(rawValue: "ANDROID_NOTIFICATION_COUNT")
    public static let locKeyMissing = IssueCode(rawValue: "LOC_KEY_MISSING")
    public static let apnsPriority = IssueCode(rawValue: "APNS_PRIORITY")
    public static let apnsExpiration = IssueCode(rawValue: "APNS_EXPIRATION")
    public static let apnsCollapseID = IssueCode(rawValue: "APNS_COLLAPSE_ID")
    public static let apnsPayload = IssueCode(rawValue: "APNS_PAYLOAD")
    public static let webpushUrgency = IssueCode(rawValue: "WEBPUSH_URGENCY")
    public static let webpushTTL = IssueCode(rawValue: "WEBPUSH_TTL")
    public static let webpushDirection = IssueCode(rawValue: "WEBPUSH_DIRECTION")
    // The connector's own rules.
    public static let appID = IssueCode(rawValue: "APP_ID")
    public static let projectID = IssueCode(rawValue: "PROJECT_ID")
    public static let messageTypeConflict = IssueCode(rawValue: "MESSAGE_TYPE_CONFLICT")
    public static let emptyNotification = IssueCode(rawValue: "EMPTY_NOTIFICATION")
    public static let messageID = IssueCode(rawValue: "MN_MESSAGE_ID")
    public static let tooManyRecipients = IssueCode(rawValue: "TOO_MANY_RECIPIENTS")
}

/// One problem found in a document: the rule (code), where (a JSON path such as
/// `recipients[2].token` or `message.android.ttl`) and what was wrong, in words.
public struct ContractIssue: Sendable, Equatable, CustomStringConvertible, Error {
    public let code: IssueCode
    public let field: String
    public let message: String

    public init(_ code: IssueCode, field: String, _ message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message) [\(code)]" }
}

/// A document refused as a whole, with every issue found (not only the first).
public struct ContractError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which contract was being read ("send job", "App ID configuration", "event").
    public let document: String
    public let issues: [ContractIssue]

    public init(document: String, issues: [ContractIssue]) {
        self.document = document
        self.issues = issues
    }

    public var description: String {
        "invalid \(document): " + issues.map(\.description).joined(separator: "; ")
    }
}
