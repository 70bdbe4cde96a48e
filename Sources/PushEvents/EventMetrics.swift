import ServiceRuntime
/// The events service's metrics, exposed as Prometheus text on `GET /metrics` (names in
/// docs/operations.md, "Metrics").
public final class EventMetrics: Sendable {
    public let registry = MetricsRegistry()
    public let requests: Counter
    /// Events answered 202 (published and confirmed).
    public let accepted: Counter
    /// `{type}`: events accepted, by event type.
    public let received: CounterFamily
    /// Requests answered 400 (`reason="invalid"`) and 413 (`too_large`).
    public let invalidRequests: Counter
    public let tooLarge: Counter
    /// Requests answered 401 (missing or wrong event key).
    public let unauthorized: Counter
    /// Requests answered 503: broker unreachable or publish not confirmed (`unavailable`), or
    /// too many bodies held at once (`busy`).
    public let unavailable: Counter
    public let busy: Counter
    /// Records committed to the database (`kind` event / result), duplicates excluded.
    public let eventsStored: Counter
    public let sendsStored: Counter
    /// Redelivered or resent records that were already stored.
    public let duplicates: Counter
    /// `{code}`: deliveries moved to the events DLQ.
    public let deadLettered: CounterFamily
    public let transactions: Counter
    public let storeFailures: Counter

    public init() {
        let r = registry
        r.gauge("push_connector_build_info", "build of this process (always 1)", labels: ["version"]).labels(BuildInfo.version).set(1)
        requests = r.counter("push_connector_events_http_requests_total", "HTTP requests received").labels()
        accepted = r.counter("push_connector_events_accepted_total", "events published and confirmed (answered 202)").labels()
        received = r.counter("push_connector_events_received_total", "events accepted, by event type", labels: ["type"])
        let rejected = r.counter("push_connector_events_rejected_total", "requests refused, by reason", labels: ["reason"])
        invalidRequests = rejected.labels("invalid")
        tooLarge = rejected.labels("too_large")
        unauthorized = rejected.labels("unauthorized")
        unavailable = rejected.labels("unavailable")
        busy = rejected.labels("busy")
        let stored = r.counter("push_connector_events_stored_total", "records committed to the database, by kind", labels: ["kind"])
        eventsStored = stored.labels("event")
        sendsStored = stored.labels("result")
        duplicates = r.counter("push_connector_events_duplicates_total", "records already stored (redeliveries, resent events)").labels()
        deadLettered = r.counter("push_connector_events_dead_lettered_total", "deliveries moved to the events DLQ, by code", labels: ["code"])
        transactions = r.counter("push_connector_events_transactions_total", "database transactions committed").labels()
        storeFailures = r.counter("push_connector_events_store_failures_total",
                                  "database transactions that failed (deliveries handed to the writer again)").labels()
    }

    /// Prometheus text exposition format (0.0.4).
    public var prometheusText: String { registry.render() }
}
