import Synchronization

/// What each lane of a running worker is doing, for `/readyz`, `/healthz` and the
/// `lanes_connected` and `prefetch` gauges: whether its consumer is consuming, with which
/// prefetch, and whether its publisher is connected.
public final class WorkerStatus: Sendable {
    private struct Lane {
        var consuming = false
        var publisherConnected: @Sendable () -> Bool = { false }
        var prefetch: @Sendable () -> Int = { 0 }
    }

    private struct State {
        var lanes: [Int: Lane] = [:]
        var running = false
        var stopping = false
    }

    private let state = Mutex(State())

    public init() {}

    func started(lanes: Int) {
        state.withLock { s in
            s.running = true
            for lane in 0..<lanes where s.lanes[lane] == nil { s.lanes[lane] = Lane() }
        }
    }

    func stopping() { state.withLock { $0.stopping = true } }
    func stopped() { state.withLock { $0.running = false } }

    func lane(_ lane: Int, publisherConnected: @escaping @Sendable () -> Bool) {
        state.withLock { $0.lanes[lane, default: Lane()].publisherConnected = publisherConnected }
    }

    func lane(_ lane: Int, prefetch: @escaping @Sendable () -> UInt16) {
        state.withLock { $0.lanes[lane, default: Lane()].prefetch = { Int(prefetch()) } }
    }

    func lane(_ lane: Int, consuming: Bool) { state.withLock { $0.lanes[lane, default: Lane()].consuming = consuming } }

    private var lanes: [(Int, Lane)] { state.withLock { $0.lanes.sorted { $0.key < $1.key } } }

    /// Lanes consuming whose publisher is connected right now.
    public var connectedLanes: Int { lanes.count { $0.1.consuming && $0.1.publisherConnected() } }

    /// The prefetch of the lanes consuming right now, summed: how many jobs the broker may push.
    public var prefetch: Int { lanes.reduce(0) { $0 + ($1.1.consuming ? $1.1.prefetch() : 0) } }

    /// Lanes consuming right now (each is one consumer of the job queue).
    public var consumingLanes: Int { lanes.count { $0.1.consuming } }

    /// nil when alive (`run` going, not shutting down), else why not.
    public var liveness: String? {
        state.withLock { s in
            if !s.running { return "the worker is not running" }
            return s.stopping ? "the worker is shutting down" : nil
        }
    }

    /// nil when every lane consumes with its publisher connected, else the first reason found.
    public var readiness: String? {
        if let dead = liveness { return dead }
        for (index, lane) in lanes {
            if !lane.consuming { return "lane \(index): not consuming (broker unreachable or reconnecting)" }
            if !lane.publisherConnected() { return "lane \(index): publisher not connected" }
        }
        return nil
    }
}
