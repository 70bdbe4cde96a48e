/// One entry of the fleet's durable control log (`<prefix>.control.log`, a stream every worker
/// reads from the start of its retention): a campaign or job cancelled, an App ID paused, or one
/// of those ended early. JSON, one object per message:
/// `{"id":"c-…","kind":"cancel","campaign":"SUMMER","app_id":"shop","reason":"wrong segment","at":…,"until":…}`.
public struct ControlRecord: Sendable, Equatable {
    /// What the record does.
    public enum Kind: String, Sendable {
        /// Stop sending the campaign (of one App ID, or all) or the job: its recipients not sent
        /// get the outcome `cancelled`.
        case cancel
        /// Hold an App ID's jobs (neither sent nor dead-lettered, no attempt counted) until `until`.
        case pause
        /// End the cancel or pause `target` early.
        case lift
        /// End every pause of `appID`.
        case resume
    }

    public var id: String
    public var kind: Kind
    public var campaign: String?
    public var appID: String?
    public var jobID: String?
    /// The cancel or pause a `lift` ends.
    public var target: String?
    public var reason: String?
    /// When it was written and when it ends by itself, milliseconds since 1970.
    public var at: Int64
    public var until: Int64

    public init(id: String, kind: Kind, campaign: String? = nil, appID: String? = nil, jobID: String? = nil, target: String? = nil,
                reason: String? = nil, at: Int64, until: Int64) {
        self.id = id
        self.kind = kind
        self.campaign = campaign
        self.appID = appID
        self.jobID = jobID
        self.target = target
        self.reason = reason
        self.at = at
        self.until = until
    }

    /// Why a log entry was refused.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The compact JSON body.
    public var encoded: [UInt8] {
        var o: [String: JSONValue] = ["id": .string(id), "kind": .string(kind.rawValue), "at": .int(at), "until": .int(until)]
        if let campaign { o["campaign"] = .string(campaign) }
        if let appID { o["app_id"] = .string(appID) }
        if let jobID { o["job_id"] = .string(jobID) }
        if let target { o["target"] = .string(target) }
        if let reason { o["reason"] = .string(reason) }
        return JSONValue.object(o).encodedBytes()
    }

    /// Decodes a body: an object with `id`, a known `kind`, `at`, `until` and what the kind needs
    /// (a cancel: a campaign or a job; a pause or resume: an App ID; a lift: its target).
    public static func decode(_ body: some Collection<UInt8>) throws(Invalid) -> ControlRecord {
        let value: JSONValue
        do { value = try JSONValue.parse(body, maxDepth: 4) } catch { throw Invalid(description: "not JSON: \(error)") }
        guard let id = value["id"]?.stringValue, !id.isEmpty else { throw Invalid(description: "no \"id\"") }
        guard let kind = value["kind"]?.stringValue.flatMap(Kind.init(rawValue:)) else { throw Invalid(description: "no known \"kind\"") }
        guard let at = value["at"]?.intValue, let until = value["until"]?.intValue else {
            throw Invalid(description: "no integer \"at\" and \"until\"")
        }
        let record = ControlRecord(id: id, kind: kind, campaign: value["campaign"]?.stringValue, appID: value["app_id"]?.stringValue,
                                   jobID: value["job_id"]?.stringValue, target: value["target"]?.stringValue,
                                   reason: value["reason"]?.stringValue, at: at, until: until)
        switch kind {
        case .cancel where record.campaign == nil && record.jobID == nil: throw Invalid(description: "a cancel names no campaign or job")
        case .pause where record.appID == nil, .resume where record.appID == nil: throw Invalid(description: "a \(kind) names no App ID")
        case .lift where record.target == nil: throw Invalid(description: "a lift names no target")
        default: return record
        }
    }

    /// One line for a person: id, what, until when, why.
    public var summary: String {
        var what: String
        switch kind {
        case .cancel: what = jobID.map { "cancel job \($0)" } ?? "cancel campaign \(campaign ?? "?")"
        case .pause: what = "pause"
        case .lift: what = "lift \(target ?? "?")"
        case .resume: what = "resume"
        }
        if let appID { what += " of App ID \(appID)" }
        return "\(id)  \(what)  until \(Timestamp(secondsSince1970: Double(until) / 1000))" + (reason.map { "  reason: \($0)" } ?? "")
    }
}
