/// The life of a broker consumer until shutdown, shared by the send worker's lanes and the
/// events consumer: reconnect with backoff, watch for shutdown while consuming, and drain what
/// is in flight within a deadline.
///
/// A *session* opens its connections and consumes until they end. One that returns is a success:
/// the next session starts at once and the backoff starts over. One that throws is a failure: the
/// next starts after `backoff.delay(afterFailures:)` of the failures in a row, a wait that
/// shutdown cuts short. Whether a lost connection is a failure is the session's choice: the
/// worker's lane returns after its consumer connection drops (it reconnects at once, the broker
/// already requeued its deliveries) and throws only when it cannot connect; the events consumer
/// also throws when a connection ends in error, so a database that keeps failing is not hammered.
public struct ConnectionLifecycle: Sendable {
    public var backoff: Backoff
    public let shutdown: ShutdownSignal

    public init(backoff: Backoff, shutdown: ShutdownSignal) {
        self.backoff = backoff
        self.shutdown = shutdown
    }

    /// Runs `session` again and again until `shutdown` is triggered. After a failed session
    /// `onFailure` hears the error and the wait before the next one; a session failing once
    /// shutdown was triggered ends the loop without a word.
    public func run(_ session: () async throws -> Void, onFailure: (any Error, Duration) -> Void) async {
        var failures = 0
        while !shutdown.isTriggered {
            do {
                try await session()
                failures = 0
            } catch {
                if shutdown.isTriggered { break }
                failures += 1
                let delay = backoff.delay(afterFailures: failures)
                onFailure(error, delay)
                await shutdown.sleep(for: delay)
            }
        }
    }

    /// Calls `stop` once shutdown is triggered, unless the returned task was cancelled first:
    /// `stop` cancels the session's consumers, which ends their delivery streams. Cancel the task
    /// when the session ends.
    public func watchShutdown(_ stop: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        Task { [shutdown] in
            await shutdown.wait()
            if !Task.isCancelled { stop() }
        }
    }

    /// Waits until `drained` returns, at most `timeout`; true when it did. On timeout `giveUp`
    /// runs first, then `drained` is cancelled: it must return soon after either of them.
    public static func drain(within timeout: Duration, giveUp: @escaping @Sendable () -> Void = {},
                             until drained: @escaping @Sendable () async -> Void) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await drained()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            if !first { giveUp() }
            group.cancelAll()
            return first
        }
    }
}
