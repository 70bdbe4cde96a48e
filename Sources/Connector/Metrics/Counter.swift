import Synchronization

/// A monotonically increasing count (one series of a `CounterFamily`).
public final class Counter: Sendable {
    private let count = Atomic<Int>(0)

    public func increment(by amount: Int = 1) { count.add(amount, ordering: .relaxed) }
    public var value: Int { count.load(ordering: .relaxed) }
}

/// A counter with labels: `labels(...)` gives the series of a label set (created on first use).
public final class CounterFamily: MetricFamily {
    let name: String
    let help: String
    var type: String { "counter" }
    private let table: SeriesTable<Counter>

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        table = SeriesTable(labelNames: labelNames) { Counter() }
    }

    /// The series for these label values, in the order of the family's label names.
    public func labels(_ values: String...) -> Counter { table.handle(values) }

    func renderSamples(into text: inout String) {
        for (values, counter) in table.sorted {
            text += name + PrometheusText.labels(table.labelNames, values) + " \(counter.value)\n"
        }
    }
}
