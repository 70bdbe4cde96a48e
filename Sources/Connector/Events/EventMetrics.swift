import Synchronization

/// Counters of the events service, exposed as Prometheus text on `GET /metrics`.
public final class EventMetrics: Sendable {
    public let requests = Atomic<Int>(0)
    /// Events answered 202 (published and confirmed).
    public let accepted = Atomic<Int>(0)
    /// Requests answered 400 / 413.
    public let invalidRequests = Atomic<Int>(0)
    /// Requests answered 401 (missing or wrong event key).
    public let unauthorized = Atomic<Int>(0)
    /// Requests answered 503 (broker unreachable or publish not confirmed).
    public let unavailable = Atomic<Int>(0)
    /// Records committed to the database (events and sends), duplicates excluded.
    public let eventsStored = Atomic<Int>(0)
    public let sendsStored = Atomic<Int>(0)
    /// Redelivered or resent records that were already stored.
    public let duplicates = Atomic<Int>(0)
    /// Deliveries that could not be parsed, moved to the events DLQ.
    public let deadLettered = Atomic<Int>(0)
    public let transactions = Atomic<Int>(0)
    public let storeFailures = Atomic<Int>(0)

    public init() {}

    /// Prometheus text exposition format (0.0.4).
    public var prometheusText: String {
        let rows: [(String, String, Int)] = [
            ("push_events_http_requests_total", "HTTP requests received", requests.load(ordering: .relaxed)),
            ("push_events_accepted_total", "events published and confirmed (answered 202)", accepted.load(ordering: .relaxed)),
            ("push_events_invalid_requests_total", "requests answered 400 or 413", invalidRequests.load(ordering: .relaxed)),
            ("push_events_unauthorized_total", "requests answered 401", unauthorized.load(ordering: .relaxed)),
            ("push_events_unavailable_total", "requests answered 503", unavailable.load(ordering: .relaxed)),
            ("push_events_stored_total", "events committed to the database", eventsStored.load(ordering: .relaxed)),
            ("push_events_sends_stored_total", "send results committed to the database", sendsStored.load(ordering: .relaxed)),
            ("push_events_duplicates_total", "records already stored (redeliveries, resent events)", duplicates.load(ordering: .relaxed)),
            ("push_events_dead_lettered_total", "deliveries moved to the events DLQ", deadLettered.load(ordering: .relaxed)),
            ("push_events_transactions_total", "database transactions committed", transactions.load(ordering: .relaxed)),
            ("push_events_store_failures_total", "database transactions that failed (deliveries requeued)", storeFailures.load(ordering: .relaxed)),
        ]
        return rows.map { "# HELP \($0.0) \($0.1)\n# TYPE \($0.0) counter\n\($0.0) \($0.2)\n" }.joined()
    }
}
