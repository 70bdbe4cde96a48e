import FCM
import ServiceRuntime

/// The worker's metrics (names fixed in docs/operations.md, "Metrics"), with the handles the
/// hot path uses resolved once. Results and dead letters are counted when their publish is
/// confirmed; FCM exchanges as the client reports them (this is its `FCMExchangeObserver`).
public final class WorkerMetrics: FCMExchangeObserver {
    public let registry = MetricsRegistry()
    /// `{app_id, outcome}`, one per recipient result published.
    public let results: CounterFamily
    /// `{app_id, code}`, one per dead-lettered job.
    public let deadLetters: CounterFamily
    /// `{tier}`: retry copies published, by retry tier (`5s`, `30s` …).
    public let retries: CounterFamily
    public let fcmDuration: Histogram
    /// `{status}`: HTTP status, or `transport` when no response arrived.
    public let fcmResponses: CounterFamily
    public let fcmInFlight: Gauge
    /// Lanes configured (`--lanes`).
    public let lanes: Gauge
    public let consumerReconnects: Counter
    public let publisherReconnects: Counter
    /// Control channel (`FleetQuota`) reopened after a loss.
    public let controlReconnects: Counter
    public let reloadsSucceeded: Counter
    public let reloadsFailed: Counter
    /// Outbound messages published and not yet confirmed by the broker.
    public let confirmsPending: Gauge
    /// `{cause}`: token requests by how they ended (`ok`, `invalid_grant`, `http_500`, …).
    public let oauthRequests: CounterFamily
    /// `{reason}`: pauses of a project that a fault of the setup started (`tls`, `auth`, `token`, `config`).
    public let projectPauses: CounterFamily
    /// Times a project turned slow (`ProjectConcurrency`): its sends over its limit deferred.
    public let projectsTurnedSlow: Counter
    private let transportFailures: Counter
    /// `fcmResponses` for the usual statuses, resolved once (no label lookup per answer).
    private let fcmStatus200: Counter

    /// The App ID label of jobs whose App ID is not configured (or unreadable): the label stays
    /// bounded whatever a publisher puts in a job.
    public static let unknownApp = "unknown"

    public init() {
        let r = registry
        r.gauge("push_connector_build_info", "build of this process (always 1)", labels: ["version"]).labels(BuildInfo.version).set(1)
        results = r.counter("push_connector_results_total", "recipient results published, by App ID and outcome",
                            labels: ["app_id", "outcome"])
        deadLetters = r.counter("push_connector_dead_letters_total", "jobs dead-lettered, by App ID and code", labels: ["app_id", "code"])
        retries = r.counter("push_connector_retries_total", "retry copies published, by retry tier", labels: ["tier"])
        fcmDuration = r.histogram("push_connector_fcm_request_duration_seconds",
                                  "time from sending an FCM request to its answer (or transport failure)").labels()
        fcmResponses = r.counter("push_connector_fcm_responses_total", "FCM answers by HTTP status (transport: none arrived)",
                                 labels: ["status"])
        transportFailures = fcmResponses.labels("transport")
        fcmStatus200 = fcmResponses.labels("200")
        fcmInFlight = r.gauge("push_connector_fcm_requests_in_flight", "FCM send requests awaiting an answer").labels()
        let reconnects = r.counter("push_connector_reconnects_total", "broker connections reopened after a loss", labels: ["connection"])
        consumerReconnects = reconnects.labels("consumer")
        publisherReconnects = reconnects.labels("publisher")
        controlReconnects = reconnects.labels("control")
        let reloads = r.counter("push_connector_config_reloads_total", "App ID configuration reloads, by result", labels: ["result"])
        reloadsSucceeded = reloads.labels("ok")
        reloadsFailed = reloads.labels("error")
        confirmsPending = r.gauge("push_connector_confirms_pending", "messages published and not yet confirmed by the broker").labels()
        oauthRequests = r.counter("push_connector_oauth_requests_total", "access token requests to token endpoints, by how they ended",
                                  labels: ["cause"])
        projectPauses = r.counter("push_connector_project_pauses_total", "project pauses started by a fault of the setup, by reason",
                                  labels: ["reason"])
        projectsTurnedSlow = r.counter("push_connector_project_slowdowns_total",
                                       "times a project turned slow (answers slower than --slow-answer, or none that long): its sends over its in-flight limit deferred").labels()
        lanes = r.gauge("push_connector_lanes", "consumer/publisher lane pairs configured").labels()
    }

    /// Adds the gauges read from live state at each scrape: connected lanes, their prefetch and
    /// paused projects.
    public func observe(status: WorkerStatus, rateLimiter: ProjectRateLimiter?, concurrency: ProjectConcurrency? = nil) {
        registry.gauge("push_connector_lanes_connected", "lanes consuming with their publisher connected") {
            [([], status.connectedLanes)]
        }
        registry.gauge("push_connector_prefetch", "unacked jobs the broker may push to this process now (sized to --prefetch-bytes)") {
            [([], status.prefetch)]
        }
        registry.gauge("push_connector_projects_paused", "Firebase projects paused right now, by reason", labels: ["reason"]) {
            let paused = rateLimiter?.pausedProjects() ?? [:]
            return ProjectRateLimiter.PauseReason.allCases.map { ([$0.rawValue], paused[$0] ?? 0) }
        }
        registry.gauge("push_connector_projects_slow", "Firebase projects answering slowly right now (their sends over the limit deferred)") {
            [([], concurrency?.slowProjectCount ?? 0)]
        }
    }

    /// Adds the gauge of App IDs paused by `push-connector pause`, read at each scrape.
    public func observe(control: FleetControl) {
        registry.gauge("push_connector_app_ids_paused", "App IDs paused by push-connector pause right now", labels: []) {
            [([], control.pausedAppIDs())]
        }
    }

    /// Counts what a delivery caused, once the broker confirmed it.
    func count(_ messages: [OutboundMessage], appID: String) {
        for m in messages {
            switch m.kind {
            case .result: results.labels(appID, m.label).increment()
            case .retry: retries.labels(m.label).increment()
            case .deadLetter: deadLetters.labels(appID, m.label).increment()
            }
        }
    }

    public func exchangeStarted() { fcmInFlight.increment() }

    public func tokenFetchFinished(status: Int?, cause: String) { oauthRequests.labels(cause).increment() }

    public func projectPaused(_ project: String, reason: ProjectRateLimiter.PauseReason, cause: FCMFailure, for duration: Duration) {
        projectPauses.labels(reason.rawValue).increment()
    }

    public func projectSlowChanged(_ project: String, slow: Bool, limit: Int) {
        if slow { projectsTurnedSlow.increment() }
    }

    public func exchangeFinished(status: Int?, duration: Duration) {
        fcmInFlight.decrement()
        fcmDuration.observe(duration)
        switch status {
        case 200: fcmStatus200.increment()
        case let status?: fcmResponses.labels(String(status)).increment()
        case nil: transportFailures.increment()
        }
    }
}
