import Synchronization

/// A monotonically increasing count (one series of a `CounterFamily`).
public final class Counter: ScalarSeries {
    private let count = Atomic<Int>(0)

    public static var type: String { "counter" }
    public init() {}
    public func increment(by amount: Int = 1) { count.add(amount, ordering: .relaxed) }
    public var value: Int { count.load(ordering: .relaxed) }
}

/// A counter with labels: `labels(...)` gives the series of a label set (created on first use).
public typealias CounterFamily = ScalarFamily<Counter>
