import PushCore
import ServiceRuntime

/// The job-level lines the worker writes. Each carries the job's `job_id`, `app_id`,
/// `campaign`, `attempt` (and `code` once dead-lettered): `log` comes with them already.
enum JobLogLines {
    /// debug: what processing decided, before publishing.
    static func processed(_ processed: ProcessedJob, redelivered: Bool, log: Logger) {
        var outcomes: [String: Int] = [:]
        var retryTier: String?
        var deadLetters = 0
        for m in processed.messages {
            switch m.kind {
            case .result: outcomes[m.label, default: 0] += 1
            case .retry: retryTier = m.label
            case .deadLetter: deadLetters += 1
            }
        }
        log.debug("job processed", ["results": outcomes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","),
                                    "retry_tier": retryTier ?? "none", "dead_letters": "\(deadLetters)",
                                    "redelivered": "\(redelivered)"])
    }

    /// Once the broker confirmed a job's messages: retries (info) and dead letters (warning).
    static func settled(_ messages: [OutboundMessage], record: JobRecord, log: Logger) {
        for m in messages {
            switch m.kind {
            case .result:
                continue
            case .retry:
                log.with(record.fields).info("job retry scheduled", ["tier": m.label, "reason": m.reason ?? ""])
            case .deadLetter:
                var dead = record
                dead.code = m.label
                log.with(dead.fields).warning("job dead-lettered", ["reason": m.reason ?? ""])
            }
        }
    }
}
