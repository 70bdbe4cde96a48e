import Dispatch
import Foundation
import Synchronization

/// A one-way "stop now" flag that tasks can wait on: triggered by SIGTERM / SIGINT (graceful
/// shutdown as a first-class idea, as in swift-service-lifecycle) or by a test.
public final class ShutdownSignal: Sendable {
    private struct State {
        var triggered = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    public init() {}

    public var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Triggers the signal; every waiter resumes. Idempotent.
    public func trigger() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard !s.triggered else { return [] }
            s.triggered = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    /// Returns once the signal is triggered.
    public func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.triggered { return true }
                s.waiters.append(c)
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// Triggers on SIGTERM and SIGINT (the default handlers are replaced). Call once, at start.
    public func installSignalHandlers(logger: Logger? = nil) {
        for (sig, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            SignalHandlers.on(sig) { [weak self] in
                logger?.info("signal received, shutting down", ["signal": name])
                self?.trigger()
            }
        }
    }
}
