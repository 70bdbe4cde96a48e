import FoundationEssentials
import PushCore

/// What the worker says about one job in its log lines and metrics: `job_id`, `app_id`,
/// `campaign`, `attempt` and, when it was dead-lettered, `code`. Filled by `JobProcessor` as it
/// learns them, so nothing is parsed twice.
public struct JobRecord: Sendable, Equatable {
    public var jobID: String?
    public var appID: String?
    public var campaign: String?
    /// This delivery's attempt, 1 for the first.
    public var attempt: Int
    /// The dead-letter code, when the job (or part of it) was dead-lettered.
    public var code: String?
    /// The App ID is configured: only then is it a metric label (see `WorkerMetrics.unknownApp`).
    public var appKnown = false

    public init(attempt: Int) { self.attempt = attempt }

    mutating func identify(_ job: SendJob, known: Bool) {
        jobID = job.jobID
        appID = job.appID
        campaign = job.campaign
        appKnown = known
    }

    /// Salvages `job_id` / `app_id` from a body that is JSON but not a valid job (best effort,
    /// for the log line only; at most 200 bytes each, control characters dropped by the logger).
    mutating func identify(unparsed body: Data) {
        guard body.count <= JobProcessor.defaultMaxJobBytes, let json = try? JSONValue.parse(body, maxDepth: 16) else { return }
        jobID = json["job_id"]?.stringValue.map { String($0.prefix(200)) }
        appID = json["app_id"]?.stringValue.map { String($0.prefix(200)) }
    }

    /// The `app_id` label of this job's metrics.
    public var appLabel: String { appKnown ? appID ?? WorkerMetrics.unknownApp : WorkerMetrics.unknownApp }

    /// The log fields, in a fixed order; absent values are left out.
    public var fields: [(String, String)] {
        var f: [(String, String)] = []
        if let jobID { f.append(("job_id", jobID)) }
        if let appID { f.append(("app_id", appID)) }
        if let campaign { f.append(("campaign", campaign)) }
        f.append(("attempt", String(attempt)))
        if let code { f.append(("code", code)) }
        return f
    }
}

/// A processed delivery: the messages to publish and what to log about the job.
public struct ProcessedJob: Sendable {
    public var messages: [OutboundMessage]
    public var record: JobRecord
}
