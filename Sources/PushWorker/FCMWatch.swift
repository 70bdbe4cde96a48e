import FCM
import ServiceRuntime

/// The worker's eye on the FCM client: exchanges and token fetches go to the metrics, and a
/// fault of the setup that pauses a project (an untrusted certificate, a token endpoint that
/// refuses or is down, credentials refused, a non-FCM answer) writes one warning line naming
/// the project, the reason, the cause and how long it waits, when the pause starts; a project
/// that turns slow (`ProjectConcurrency`) writes one warning, and one line when it is prompt again.
public struct FCMWatch: FCMExchangeObserver {
    public let metrics: WorkerMetrics
    public let log: Logger

    public init(metrics: WorkerMetrics, log: Logger) {
        self.metrics = metrics
        self.log = log
    }

    public func exchangeStarted() { metrics.exchangeStarted() }

    public func exchangeFinished(status: Int?, duration: Duration) { metrics.exchangeFinished(status: status, duration: duration) }

    public func tokenFetchFinished(status: Int?, cause: String) {
        metrics.tokenFetchFinished(status: status, cause: cause)
        if cause == "invalid_grant" {
            log.error("token endpoint refused the service account: invalid_grant (a deleted or disabled key, or a clock far off)",
                      ["status": status.map(String.init) ?? "none"])
        }
    }

    public func projectPaused(_ project: String, reason: ProjectRateLimiter.PauseReason, cause: FCMFailure, for duration: Duration) {
        metrics.projectPaused(project, reason: reason, cause: cause, for: duration)
        log.warning("project paused: its sends wait in the retry tiers without using attempts",
                    ["project_id": project, "reason": reason.rawValue, "code": cause.code,
                     "cause": String(cause.message.prefix(300)), "pause_s": String(Int(duration.components.seconds))])
    }

    public func projectSlowChanged(_ project: String, slow: Bool, limit: Int) {
        metrics.projectSlowChanged(project, slow: slow, limit: limit)
        if slow {
            log.warning("project answers slowly: its sends over the limit in flight wait in the retry tiers without using attempts",
                        ["project_id": project, "in_flight_limit": String(limit)])
        } else {
            log.info("project answers promptly again", ["project_id": project, "in_flight_limit": String(limit)])
        }
    }
}
