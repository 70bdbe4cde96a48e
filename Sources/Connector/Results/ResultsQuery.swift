import AMQP
import CLIKit
import FoundationEssentials
import PushCore

/// What `push-connector results` reads: where in the stream it starts and which results it
/// keeps (`--from`, `--app-id`, `--outcome`, `--job-id`). Filters compare the result's JSON
/// fields as strings, so an outcome this version does not know still matches.
public struct ResultsQuery: Sendable, Equatable {
    public var from: StreamOffset = .first
    public var appID: String?
    public var outcome: String?
    public var jobID: String?

    public init(from: StreamOffset = .first, appID: String? = nil, outcome: String? = nil, jobID: String? = nil) {
        self.from = from
        self.appID = appID
        self.outcome = outcome
        self.jobID = jobID
    }

    /// `first`, `last`, `next`, an offset (a whole number ≥ 0), an RFC 3339 instant
    /// (`2026-11-30T08:00:00Z`) or unix seconds written `@1764489600`.
    public static func offset(_ text: String, command: String) throws(UsageError) -> StreamOffset {
        switch text {
        case "first": return .first
        case "last": return .last
        case "next": return .next
        default: break
        }
        if let n = Int64(text), n >= 0 { return .offset(n) }
        if text.hasPrefix("@"), let seconds = Int64(text.dropFirst()), seconds >= 0 {
            return .timestamp(Date(timeIntervalSince1970: TimeInterval(seconds)))
        }
        if let t = Timestamp(rfc3339: text) { return .timestamp(Date(timeIntervalSince1970: t.secondsSince1970)) }
        throw UsageError("\(command): --from must be first, last, next, an offset (0, 1234), an RFC 3339 time "
            + "(2026-11-30T08:00:00Z) or unix seconds (@1764489600), got \"\(text)\"")
    }

    /// True when the result `json` passes every filter given.
    public func matches(_ json: JSONValue) -> Bool {
        func field(_ name: String, _ wanted: String?) -> Bool { wanted == nil || json[name]?.stringValue == wanted }
        return field("app_id", appID) && field("outcome", outcome) && field("job_id", jobID)
    }

    /// One line for a person: offset, completion time, app, outcome, job, message id, target,
    /// and the error code when there is one.
    public static func text(_ json: JSONValue, offset: Int64?) -> String {
        func s(_ name: String) -> String { json[name]?.stringValue ?? "-" }
        let target = json["target"]?.objectValue?.first.map { "\($0.key)=\($0.value.stringValue ?? "?")" } ?? "-"
        var line = "\(offset.map(String.init) ?? "-")  \(s("completed_at"))  \(s("app_id"))  \(s("outcome"))  job=\(s("job_id"))  "
            + "\(s("mn_message_id"))  \(target)"
        if let code = json["error"]?["code"]?.stringValue { line += "  \(code)" }
        return line
    }
}
