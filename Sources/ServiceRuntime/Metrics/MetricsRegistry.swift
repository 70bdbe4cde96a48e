import Synchronization

/// A process's metrics, rendered as Prometheus text (format 0.0.4) for `GET /metrics`.
///
/// Families are registered once at start (each name once) and rendered in registration order.
/// Updating a series is an atomic add (counters, gauges) or a short lock (histograms); nothing
/// on the hot path allocates once its label set has been seen.
public final class MetricsRegistry: Sendable {
    private let families = Mutex<[any MetricFamily]>([])

    public init() {}

    public func counter(_ name: String, _ help: String, labels: [String] = []) -> CounterFamily {
        register(CounterFamily(name: name, help: help, labelNames: labels))
    }

    public func gauge(_ name: String, _ help: String, labels: [String] = []) -> GaugeFamily {
        register(GaugeFamily(name: name, help: help, labelNames: labels))
    }

    public func histogram(_ name: String, _ help: String, labels: [String] = [],
                          buckets: [Double] = Histogram.defaultBuckets) -> HistogramFamily {
        register(HistogramFamily(name: name, help: help, labelNames: labels, buckets: buckets))
    }

    /// A gauge whose samples `read` returns at each scrape (label values in the order of `labels`).
    public func gauge(_ name: String, _ help: String, labels: [String] = [],
                      read: @escaping @Sendable () -> [(labels: [String], value: Int)]) {
        register(GaugeFunction(name: name, help: help, labelNames: labels, read: read))
    }

    @discardableResult
    private func register<F: MetricFamily>(_ family: F) -> F {
        precondition(PrometheusText.isValidName(family.name), "bad metric name \(family.name)")
        families.withLock { families in
            precondition(!families.contains { $0.name == family.name }, "metric \(family.name) registered twice")
            families.append(family)
        }
        return family
    }

    /// Every family: `# HELP`, `# TYPE`, then its samples.
    public func render() -> String {
        var text = ""
        for family in families.withLock({ $0 }) {
            text += "# HELP \(family.name) \(PrometheusText.escapeHelp(family.help))\n# TYPE \(family.name) \(family.type)\n"
            family.renderSamples(into: &text)
        }
        return text
    }
}
