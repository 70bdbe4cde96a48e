import Synchronization

/// A value that goes up and down (one series of a `GaugeFamily`).
public final class Gauge: ScalarSeries {
    private let current = Atomic<Int>(0)

    public static var type: String { "gauge" }
    public init() {}
    public func set(_ value: Int) { current.store(value, ordering: .relaxed) }
    public func increment(by amount: Int = 1) { current.add(amount, ordering: .relaxed) }
    public func decrement(by amount: Int = 1) { current.subtract(amount, ordering: .relaxed) }
    public var value: Int { current.load(ordering: .relaxed) }
}

/// A gauge with labels, set by its owner.
public typealias GaugeFamily = ScalarFamily<Gauge>

/// A gauge read at scrape time from state owned elsewhere (lanes connected, paused projects):
/// nothing to keep in step, and the value is never stale.
final class GaugeFunction: MetricFamily {
    let name: String
    let help: String
    var type: String { "gauge" }
    private let labelNames: [String]
    private let read: @Sendable () -> [(labels: [String], value: Int)]

    init(name: String, help: String, labelNames: [String], read: @escaping @Sendable () -> [(labels: [String], value: Int)]) {
        for label in labelNames { precondition(PrometheusText.isValidName(label, allowColon: false), "bad label name \(label)") }
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.read = read
    }

    func renderSamples(into text: inout String) {
        for sample in read().sorted(by: { $0.labels.lexicographicallyPrecedes($1.labels) })
        where sample.labels.count == labelNames.count {
            text += name + PrometheusText.labels(labelNames, sample.labels) + " \(sample.value)\n"
        }
    }
}
