import Synchronization

/// What the registry renders: one metric name with its HELP, TYPE and samples.
protocol MetricFamily: Sendable {
    var name: String { get }
    var help: String { get }
    /// `counter`, `gauge` or `histogram`.
    var type: String { get }
    /// Appends the family's sample lines (without HELP / TYPE).
    func renderSamples(into text: inout String)
}

/// The series of one labelled family: label values (in the order of the family's label names)
/// to a handle, created on first use and kept. Callers on a hot path resolve a handle once and
/// keep it; a lookup here takes one lock.
final class SeriesTable<Series: Sendable>: Sendable {
    let labelNames: [String]
    private let series = Mutex<[[String]: Series]>([:])
    private let make: @Sendable () -> Series

    init(labelNames: [String], make: @escaping @Sendable () -> Series) {
        for label in labelNames {
            precondition(PrometheusText.isValidName(label, allowColon: false) && label != "le", "bad label name \(label)")
        }
        self.labelNames = labelNames
        self.make = make
        // A family without labels has exactly one series, shown from the start (as 0).
        if labelNames.isEmpty { _ = self.handle([]) }
    }

    func handle(_ values: [String]) -> Series {
        precondition(values.count == labelNames.count, "expected \(labelNames.count) label values, got \(values.count)")
        return series.withLock { table in
            if let existing = table[values] { return existing }
            let created = make()
            table[values] = created
            return created
        }
    }

    /// Every series, sorted by label values so that the output is stable.
    var sorted: [(values: [String], series: Series)] {
        series.withLock { table in table.map { ($0.key, $0.value) } }.sorted { $0.values.lexicographicallyPrecedes($1.values) }
    }
}
