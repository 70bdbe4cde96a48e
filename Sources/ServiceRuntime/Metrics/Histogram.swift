import Synchronization

/// Observations counted into buckets (one series of a `HistogramFamily`), rendered as
/// cumulative `_bucket{le=…}` lines ending with `+Inf`, then `_sum` and `_count`.
public final class Histogram: Sendable {
    private struct State {
        var counts: [Int]
        var sum = 0.0
    }

    /// Upper bounds, ascending, without `+Inf`.
    let bounds: [Double]
    private let state: Mutex<State>

    /// Prometheus' default buckets (seconds), from 5 ms to 10 s.
    public static let defaultBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    init(bounds: [Double]) {
        self.bounds = bounds
        state = Mutex(State(counts: Array(repeating: 0, count: bounds.count + 1)))
    }

    /// Counts `value` into the first bucket whose bound is at least `value`.
    public func observe(_ value: Double) {
        let index = bounds.firstIndex { value <= $0 } ?? bounds.count
        state.withLock { s in
            s.counts[index] += 1
            s.sum += value
        }
    }

    /// Counts a duration, in seconds.
    public func observe(_ duration: Duration) {
        observe(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    /// Cumulative counts per bound (the last one is `+Inf`, the total count) and the sum.
    var snapshot: (cumulative: [Int], sum: Double) {
        let (counts, sum) = state.withLock { ($0.counts, $0.sum) }
        var running = 0
        return (counts.map { running += $0; return running }, sum)
    }
}

/// A histogram with labels; every series shares the family's buckets.
public final class HistogramFamily: MetricFamily {
    let name: String
    let help: String
    var type: String { "histogram" }
    private let table: SeriesTable<Histogram>

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        precondition(!buckets.isEmpty && zip(buckets, buckets.dropFirst()).allSatisfy { $0 < $1 } && buckets.allSatisfy(\.isFinite),
                     "histogram buckets must be finite and strictly ascending")
        self.name = name
        self.help = help
        table = SeriesTable(labelNames: labelNames) { Histogram(bounds: buckets) }
    }

    /// The series for these label values, in the order of the family's label names.
    public func labels(_ values: String...) -> Histogram { table.handle(values) }

    func renderSamples(into text: inout String) {
        for (values, histogram) in table.sorted {
            let (cumulative, sum) = histogram.snapshot
            let bounds = histogram.bounds.map(PrometheusText.number) + ["+Inf"]
            for (bound, count) in zip(bounds, cumulative) {
                text += name + "_bucket" + PrometheusText.labels(table.labelNames + ["le"], values + [bound]) + " \(count)\n"
            }
            let labels = PrometheusText.labels(table.labelNames, values)
            text += name + "_sum" + labels + " " + PrometheusText.number(sum) + "\n"
            text += name + "_count" + labels + " \(cumulative.last ?? 0)\n"
        }
    }
}
