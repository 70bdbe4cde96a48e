import Synchronization

/// A count that goes up and down, with the highest value it reached: tests pin with it that the
/// composed messages waiting for their send stay within the send window, and the jobs being sent
/// within the job admission.
final class HighWaterGauge: Sendable {
    private let state = Mutex((current: 0, highest: 0))

    init() {}

    func increment() {
        state.withLock { s in
            s.current += 1
            s.highest = max(s.highest, s.current)
        }
    }

    func decrement() { state.withLock { $0.current -= 1 } }

    var current: Int { state.withLock { $0.current } }
    var highest: Int { state.withLock { $0.highest } }
}
