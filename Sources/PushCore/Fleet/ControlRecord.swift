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

    /// The largest body read (a record the CLI writes is a few hundred bytes).
    public static let maxBodyBytes = 16 << 10
    /// The longest a cancel or pause lasts (the CLI's `--for` limit, within the log's retention).
    public static let longestMillis: Int64 = 30 * 86_400_000
    /// How far in the future of the reader's clock a record may have been written (clocks of
    /// operators' hosts and workers differ by seconds, not hours).
    public static let futureSkewMillis: Int64 = 15 * 60_000
    /// The longest reason kept, in characters; a longer one is cut (the record still applies).
    public static let maxReasonCharacters = 256

    /// Decodes a body: an object with `id`, a known `kind`, `at`, `until` and what the kind needs
    /// (a cancel: a campaign or a job; a pause or resume: an App ID; a lift: its target).
    ///
    /// Bounded, since anyone who may publish to the log writes what every worker reads at each
    /// start (second audit, finding 9): a body over `maxBodyBytes`, an id, campaign, job id, App
    /// ID or target over the job contract's lengths, an App ID the job contract refuses, or a
    /// record written more than `futureSkewMillis` after `now` is refused; `until` is cut to
    /// `longestMillis` after `at` and the reason to `maxReasonCharacters`.
    public static func decode(_ body: some Collection<UInt8>, now: Int64) throws(Invalid) -> ControlRecord {
        guard body.count <= maxBodyBytes else { throw Invalid(description: "\(body.count) bytes, over \(maxBodyBytes)") }
        let value: JSONValue
        do { value = try JSONValue.parse(body, maxDepth: 4) } catch { throw Invalid(description: "not JSON: \(error)") }
        guard let id = value["id"]?.stringValue, !id.isEmpty else { throw Invalid(description: "no \"id\"") }
        guard let kind = value["kind"]?.stringValue.flatMap(Kind.init(rawValue:)) else { throw Invalid(description: "no known \"kind\"") }
        guard let at = value["at"]?.intValue, let until = value["until"]?.intValue else {
            throw Invalid(description: "no integer \"at\" and \"until\"")
        }
        guard at <= now + futureSkewMillis else {
            throw Invalid(description: "written at \(Timestamp(secondsSince1970: Double(at) / 1000)), in the future of this clock")
        }
        let limits: [(String, Int)] = [("id", 128), ("campaign", SendJob.MaxBytes.campaign), ("app_id", SendJob.MaxBytes.appID),
                                       ("job_id", SendJob.MaxBytes.jobID), ("target", 128)]
        for (field, limit) in limits {
            if let text = value[field]?.stringValue, text.utf8.count > limit { throw Invalid(description: "\"\(field)\" over \(limit) bytes") }
        }
        if let appID = value["app_id"]?.stringValue, let problem = IdentifierRules.appIDProblem(appID) {
            throw Invalid(description: "app_id \(problem)")
        }
        let reason = value["reason"]?.stringValue.map { $0.count > maxReasonCharacters ? String($0.prefix(maxReasonCharacters - 1)) + "…" : $0 }
        let longest = at > Int64.max - longestMillis ? Int64.max : at + longestMillis
        let record = ControlRecord(id: id, kind: kind, campaign: value["campaign"]?.stringValue, appID: value["app_id"]?.stringValue,
                                   jobID: value["job_id"]?.stringValue, target: value["target"]?.stringValue,
                                   reason: reason, at: at, until: min(until, longest))
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
        // Escaped: the fields come from whoever wrote to the log, and this line reaches terminals.
        return PrintableText.escaped("\(id)  \(what)  until \(Timestamp(secondsSince1970: Double(until) / 1000))")
            + (reason.map { "  reason: \(PrintableText.escaped($0))" } ?? "")
    }
}
