import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// A one-way "stop now" flag that tasks can wait on: triggered by SIGTERM / SIGINT (graceful
/// shutdown as a first-class idea, as in swift-service-lifecycle) or by a test.
public final class ShutdownSignal: Sendable {
    private struct State {
        var triggered = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())
    public init() {}

    public var isTriggered: Bool { state.withLock { $0.triggered } }

    /// Triggers the signal; every waiter resumes. Idempotent.
    public func trigger() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard !s.triggered else { return [] }
            s.triggered = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume() }
    }

    /// Returns once the signal is triggered, or as soon as the calling task is cancelled.
    public func wait() async {
        let id = state.withLock { s -> Int in
            defer { s.nextID += 1 }
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.triggered || Task.isCancelled { return true }
                    s.waiters[id] = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Sleeps for `duration`, or less if the signal is triggered meanwhile (a backoff that must
    /// not delay shutdown).
    public func sleep(for duration: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: duration) }
            group.addTask { await self.wait() }
            await group.next()
            group.cancelAll()
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
