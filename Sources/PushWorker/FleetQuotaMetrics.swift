import ServiceRuntime
/// The worker's metrics of quota sharing (`FleetQuota`), registered beside `WorkerMetrics`'
/// in the same registry: the consumers counted on the job queue, this process's share, the
/// pauses it announced and heard.
public struct FleetQuotaMetrics: Sendable {
    /// Consumers of the job queue at the last count (every lane of every process is one).
    public let queueConsumers: Gauge
    /// This process's share of every project's quota, in thousandths (1000: the whole quota).
    public let sharePermille: Gauge
    /// Pauses this process announced after a 429.
    public let pausesSent: Counter
    /// Valid pause messages heard (its own included) and applied.
    public let pausesReceived: Counter
    /// Control messages dropped as malformed.
    public let pausesDropped: Counter
    /// Control connections reopened after a loss.
    public let reconnects: Counter

    /// Registers the families in `metrics`' registry (`reconnects` is its
    /// `push_connector_reconnects_total{connection="control"}`).
    public init(_ metrics: WorkerMetrics) {
        let r = metrics.registry
        queueConsumers = r.gauge("push_connector_quota_queue_consumers",
                                 "consumers of the job queue at the last count (the fleet's lanes)").labels()
        sharePermille = r.gauge("push_connector_quota_share_permille",
                                "this process's share of each project's FCM quota, in thousandths").labels()
        sharePermille.set(1000)
        let pauses = r.counter("push_connector_quota_pauses_total",
                               "quota pauses on the control exchange: sent after a 429 here, received and applied, dropped as malformed",
                               labels: ["direction"])
        pausesSent = pauses.labels("sent")
        pausesReceived = pauses.labels("received")
        pausesDropped = pauses.labels("dropped")
        reconnects = metrics.controlReconnects
    }
}
