/// How one recipient (or topic / condition target) of a job ended. Transient and
/// operator-fixable failures are not outcomes: they go to retry, then to the DLQ.
public enum SendOutcome: String, Sendable, CaseIterable {
    case sent
    /// `validate_only` job accepted by FCM.
    case validated
    /// FCM said UNREGISTERED: the token is dead, prune it.
    case invalidToken = "invalid_token"
    /// Resending cannot help (INVALID_ARGUMENT, SENDER_ID_MISMATCH, a limit broken).
    case rejected
    /// Past the job's `not_after`.
    case expired
    /// The job (or this recipient's part of it) went to the jobs DLQ; `error.code` is the
    /// dead-letter code. A replay may later give the recipient another outcome.
    case deadLettered = "dead_lettered"
    /// Its campaign or job was cancelled (`push-connector cancel`) before it was sent;
    /// `error.code` is `CANCELLED`, the message names the cancel and its reason.
    case cancelled
}

/// The error detail of a result that is not `sent`.
public struct ResultError: Sendable, Equatable {
    public var code: String
    public var httpStatus: Int?
    public var message: String

    public init(code: String, httpStatus: Int? = nil, message: String) {
        self.code = code
        self.httpStatus = httpStatus
        self.message = message
    }
}

/// One result per recipient, published on `push.results` with routing key
/// `<app_id>.<outcome>` (contract: docs/contracts.md).
public struct SendResult: Sendable, Equatable {
    public var jobID: String
    public var appID: String
    public var mnMessageID: String
    public var campaign: String?
    /// `token`, `topic` or `condition`, and its value.
    public var target: (kind: String, value: String)
    public var outcome: SendOutcome
    public var fcmMessageName: String?
    public var error: ResultError?
    public var attempts: Int
    public var completedAt: Timestamp
    /// How many times an operator had replayed the job from the DLQ (its `push-replays`): with
    /// `completedAt`, orders the results of one `mn_message_id` (`isLater(than:)`).
    public var replays: Int
    /// A `dead_lettered` result of a job an attempt of which timed out after its request was
    /// sent whole: FCM may have delivered it anyway (`possibly_delivered: true`, else absent).
    public var possiblyDelivered = false
    /// A `sent` result of a job an earlier attempt of which timed out after its request was
    /// sent whole: the device may have the push twice (`possibly_duplicate: true`, else absent).
    public var possiblyDuplicate = false

    public init(jobID: String, appID: String, mnMessageID: String, campaign: String?, target: (kind: String, value: String),
                outcome: SendOutcome, fcmMessageName: String? = nil, error: ResultError? = nil, attempts: Int, completedAt: Timestamp,
                replays: Int = 0) {
        self.jobID = jobID
        self.appID = appID
        self.mnMessageID = mnMessageID
        self.campaign = campaign
        self.target = target
        self.outcome = outcome
        self.fcmMessageName = fcmMessageName
        self.error = error
        self.attempts = attempts
        self.completedAt = completedAt
        self.replays = replays
    }

    public static func == (a: SendResult, b: SendResult) -> Bool {
        a.jobID == b.jobID && a.appID == b.appID && a.mnMessageID == b.mnMessageID && a.campaign == b.campaign
            && a.target.kind == b.target.kind && a.target.value == b.target.value && a.outcome == b.outcome
            && a.fcmMessageName == b.fcmMessageName && a.error == b.error && a.attempts == b.attempts && a.completedAt == b.completedAt
            && a.replays == b.replays && a.possiblyDelivered == b.possiblyDelivered && a.possiblyDuplicate == b.possiblyDuplicate
    }

    /// The latest-outcome rule of the contract: of two results for one `mn_message_id`, the
    /// later is the one with more `replays`, then the later `completed_at` (whole seconds); on
    /// a tie an outcome other than `dead_lettered` wins (the message did reach FCM). Equal on all
    /// three: neither is later (a redelivered duplicate).
    public func isLater(than other: SendResult) -> Bool {
        Self.latestOrder(self) > Self.latestOrder(other)
    }

    private static func latestOrder(_ r: SendResult) -> (Int, Int64, Int) {
        (r.replays, Int64(r.completedAt.secondsSince1970.rounded(.down)), r.outcome == .deadLettered ? 0 : 1)
    }

    /// The `schema_version` every result carries (docs/contracts.md; contracts/result.schema.json).
    /// A reader refuses a newer one by name; a result without it (earlier releases) is version 1.
    public static let schemaVersion = 1

    /// The routing key on the results exchange.
    public var routingKey: String { "\(appID).\(outcome.rawValue)" }

    /// The result as contract JSON.
    public func encoded() -> JSONValue {
        var o: [String: JSONValue] = [
            "job_id": .string(jobID), "app_id": .string(appID), "mn_message_id": .string(mnMessageID),
            "target": .object([target.kind: .string(target.value)]), "outcome": .string(outcome.rawValue),
            "attempts": .int(Int64(attempts)), "completed_at": .string(completedAt.description),
            "replays": .int(Int64(replays)), "schema_version": .int(Int64(Self.schemaVersion)),
        ]
        if let campaign { o["campaign"] = .string(campaign) }
        if possiblyDelivered { o["possibly_delivered"] = .bool(true) }
        if possiblyDuplicate { o["possibly_duplicate"] = .bool(true) }
        if let fcmMessageName { o["fcm_message_name"] = .string(fcmMessageName) }
        if let error {
            var e: [String: JSONValue] = ["code": .string(error.code), "message": .string(error.message)]
            if let s = error.httpStatus { e["http_status"] = .int(Int64(s)) }
            o["error"] = .object(e)
        }
        return .object(o)
    }

    /// Reads a result (for consumers such as the events store).
    public static func decode(_ json: JSONValue) throws(ContractError) -> SendResult {
        guard case .object(let object) = json else {
            throw ContractError(document: "result", issues: [ContractIssue(.wrongType, field: "$", "must be an object")])
        }
        var r = FieldReader(object, path: "")
        r.schemaVersion(supported: schemaVersion)
        let jobID = r.requiredString("job_id")
        let appID = r.requiredString("app_id")
        let id = r.requiredString("mn_message_id")
        let campaign = r.optionalString("campaign")
        let outcomeRaw = r.requiredString("outcome")
        let outcome = outcomeRaw.flatMap(SendOutcome.init(rawValue:))
        if outcomeRaw != nil, outcome == nil { r.report(ContractIssue(.invalidValue, field: "outcome", "unknown outcome")) }
        let targetObject = r.optionalObject("target") ?? [:]
        let target = targetObject.first.flatMap { k, v in v.stringValue.map { (k, $0) } }
        if target == nil { r.report(ContractIssue(.missingField, field: "target", "required field is missing")) }
        let name = r.optionalString("fcm_message_name")
        var error: ResultError?
        if let e = r.optionalObject("error") {
            error = ResultError(code: e["code"]?.stringValue ?? "", httpStatus: e["http_status"]?.intValue.map(Int.init),
                                message: e["message"]?.stringValue ?? "")
        }
        let attempts = object["attempts"]?.intValue.map(Int.init) ?? 1
        let completed = r.optionalTimestamp("completed_at") ?? Timestamp(secondsSince1970: 0)
        let replays = object["replays"]?.intValue.map { Int(min(max($0, 0), 1_000_000)) } ?? 0
        guard r.issues.isEmpty, let jobID, let appID, let id, let outcome, let target else {
            throw ContractError(document: "result", issues: r.issues)
        }
        var result = SendResult(jobID: jobID, appID: appID, mnMessageID: id, campaign: campaign, target: target, outcome: outcome,
                                fcmMessageName: name, error: error, attempts: attempts, completedAt: completed, replays: replays)
        result.possiblyDelivered = object["possibly_delivered"] == .bool(true)
        result.possiblyDuplicate = object["possibly_duplicate"] == .bool(true)
        return result
    }
}
