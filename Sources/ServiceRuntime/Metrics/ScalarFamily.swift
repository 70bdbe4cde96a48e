/// A series holding one whole number: a `Counter` or a `Gauge`.
public protocol ScalarSeries: AnyObject, Sendable {
    /// `counter` or `gauge`.
    static var type: String { get }
    init()
    var value: Int { get }
}

/// A family of counters or gauges with labels: `labels(...)` gives the series of a label set
/// (created on first use, then kept).
public final class ScalarFamily<Series: ScalarSeries>: MetricFamily {
    let name: String
    let help: String
    var type: String { Series.type }
    private let table: SeriesTable<Series>

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        table = SeriesTable(labelNames: labelNames) { Series() }
    }

    /// The series for these label values, in the order of the family's label names.
    public func labels(_ values: String...) -> Series { table.handle(values) }

    func renderSamples(into text: inout String) {
        for (values, series) in table.sorted {
            text += name + PrometheusText.labels(table.labelNames, values) + " \(series.value)\n"
        }
    }
}
