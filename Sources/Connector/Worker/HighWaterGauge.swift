import Synchronization

/// A count that goes up and down, with the highest value it reached: how many composed messages
/// wait for their send at once (tests pin that it stays within the send window).
final class HighWaterGauge: Sendable {
    private let state = Mutex((current: 0, highest: 0))

    init() {}

    /// One more composed message waiting for its send.
    func composed() {
        state.withLock { s in
            s.current += 1
            s.highest = max(s.highest, s.current)
        }
    }

    /// One send returned.
    func sent() { state.withLock { $0.current -= 1 } }

    var current: Int { state.withLock { $0.current } }
    var highest: Int { state.withLock { $0.highest } }
}
