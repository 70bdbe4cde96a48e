import AMQP
import FCM
import FoundationEssentials
import PushCore
import ServiceRuntime
import Synchronization

/// Makes the worker processes on one job queue behave as one client of FCM's per-project quota
/// (docs/decisions/0058-replicas-share-the-quota.md):
///
/// - **Share.** At start, whenever one of this process's lanes starts or stops consuming, and
///   every `refreshInterval`, it counts the consumers of the job queue and sets its rate limiter
///   to its share (`QuotaShare`: own lanes / all consumers).
/// - **Pause.** A 429 here pauses the project locally (the rate limiter) and is announced on the
///   control exchange as `{project, paused_until}`; every process, this one included, applies
///   what it hears. `FleetPauseLedger` keeps repeated 429s from becoming a storm, and what is
///   heard is never announced again.
///
/// All of it runs on a control connection of its own. While it is down, sends go on at the last
/// share (logged; reopened with backoff); a 429 then pauses only the process that got it.
public final class FleetQuota: Service {
    /// Tunables.
    public struct Configuration: Sendable {
        public var settings: AMQPSettings
        public var topology: Topology
        /// This process's lanes (consumers of the job queue).
        public var lanes: Int
        /// Between two counts of the job queue's consumers.
        public var refreshInterval: Duration = .seconds(5)
        public var reconnectBackoff = Backoff(initial: .milliseconds(200), max: .seconds(30))
        /// How often this process's own lanes are looked at (local, cheap).
        public var ownLanesPoll: Duration = .milliseconds(250)

        public init(settings: AMQPSettings, topology: Topology, lanes: Int) {
            self.settings = settings
            self.topology = topology
            self.lanes = lanes
        }
    }

    public let configuration: Configuration
    private let rateLimiter: ProjectRateLimiter
    private let status: WorkerStatus
    private let metrics: FleetQuotaMetrics
    private let logger: Logger
    private let share: Mutex<QuotaShare>
    private let ledger = Mutex(FleetPauseLedger())
    private let channel = Mutex<ControlChannel?>(nil)

    public init(configuration: Configuration, rateLimiter: ProjectRateLimiter, status: WorkerStatus,
                metrics: FleetQuotaMetrics, logger: Logger) {
        self.configuration = configuration
        self.rateLimiter = rateLimiter
        self.status = status
        self.metrics = metrics
        self.logger = logger.child("quota")
        share = Mutex(QuotaShare(ownLanes: configuration.lanes))
    }

    /// Runs until `shutdown`: keeps the control channel open (reopening it with backoff),
    /// counts consumers, announces and applies pauses.
    public func run(until shutdown: ShutdownSignal) async {
        rateLimiter.onQuotaPause { [weak self] project, duration in self?.announce(project: project, pause: duration) }
        defer { rateLimiter.onQuotaPause(nil) }
        var failures = 0
        while !shutdown.isTriggered {
            do {
                let control = try await ControlChannel.open(settings: configuration.settings, exchange: configuration.topology.controlExchange)
                channel.withLock { $0 = control }
                failures = 0
                let error = await serve(control, shutdown: shutdown)
                channel.withLock { $0 = nil }
                await control.close()
                if let error, !shutdown.isTriggered {
                    metrics.reconnects.increment()
                    logger.warning("control channel lost, reconnecting; sends go on at the last quota share", ["error": "\(error)"])
                }
            } catch {
                failures += 1
                let delay = configuration.reconnectBackoff.delay(afterFailures: failures)
                logger.warning("cannot open the control channel, retrying; sends go on at the last quota share",
                               ["error": "\(error)", "in": "\(delay)"])
                await shutdown.sleep(for: delay)
            }
        }
    }

    /// Reads the control messages while counting consumers; returns the error that ended the
    /// channel (nil: shutdown).
    private func serve(_ control: ControlChannel, shutdown: ShutdownSignal) async -> (any Error)? {
        let counter = Task { await self.countConsumers(on: control, shutdown: shutdown) }
        let closer = Task {
            await shutdown.wait()
            await control.close()
        }
        defer {
            counter.cancel()
            closer.cancel()
        }
        do {
            for try await body in control.messages { receive(body) }
            return nil
        } catch {
            return error
        }
    }

    /// Counts the job queue's consumers now, whenever this process's consuming lanes change, and
    /// every `refreshInterval`, until cancelled or the channel fails (which ends its stream too).
    private func countConsumers(on control: ControlChannel, shutdown: ShutdownSignal) async {
        var lastOwn = -1
        var lastCount: ContinuousClock.Instant?
        while !Task.isCancelled && !shutdown.isTriggered {
            let own = status.consumingLanes
            if own != lastOwn || lastCount.map({ ContinuousClock.now - $0 >= configuration.refreshInterval }) ?? true {
                do {
                    let count = try await control.consumerCount(of: configuration.topology.jobsQueue)
                    apply(count: count, ownConsuming: min(own, status.consumingLanes))
                } catch {
                    return  // the channel is gone; `serve` sees its stream end and reconnects
                }
                lastOwn = own
                lastCount = .now
                ledger.withLock { $0.prune(now: Self.epochMillis()) }
            }
            try? await Task.sleep(for: configuration.ownLanesPoll)
        }
    }

    private func apply(count: Int, ownConsuming: Int) {
        let (before, after, fleet) = share.withLock { rule in
            let before = rule.share
            return (before, rule.update(reported: count, ownConsuming: ownConsuming), rule.fleetConsumers)
        }
        metrics.queueConsumers.set(count)
        metrics.sharePermille.set(Int((after * 1000).rounded()))
        guard after != before else { return }
        rateLimiter.setShare(after)
        logger.info("quota share changed", ["queue_consumers": "\(count)", "fleet_consumers": fleet.map { "\($0)" } ?? "?",
                                            "own_lanes": "\(configuration.lanes)", "share": String(printf: "%.3f", after)])
    }

    /// A 429 paused `project` here for `pause`: tell the fleet, unless a pause at least as long
    /// is already known.
    func announce(project: String, pause: Duration) {
        let until = Self.epochMillis() + Self.millis(pause)
        guard ledger.withLock({ $0.shouldBroadcast(project: project, until: until) }) else { return }
        let message = Data(QuotaPauseMessage(project: project, pausedUntil: until).encoded)
        if channel.withLock({ $0 })?.publish(message, ttl: pause) == true {
            metrics.pausesSent.increment()
            logger.info("quota pause announced to the fleet", ["project": project, "pause": "\(pause)"])
        } else {
            logger.warning("quota pause not announced: the control channel is down", ["project": project])
        }
    }

    /// A control message: apply the pause it carries (idempotent), or drop it with a warning.
    func receive(_ body: Data) {
        let now = Self.epochMillis()
        do {
            let message = try QuotaPauseMessage.decode(body, now: now)
            ledger.withLock { $0.received(project: message.project, until: message.pausedUntil) }
            metrics.pausesReceived.increment()
            let remaining = message.pausedUntil - now
            guard remaining > 0 else { return }
            rateLimiter.applyFleetPause(project: message.project, for: .milliseconds(remaining))
            logger.debug("quota pause heard", ["project": message.project, "remaining_ms": "\(remaining)"])
        } catch {
            metrics.pausesDropped.increment()
            logger.warning("control message dropped", ["error": "\(error)", "bytes": "\(body.count)"])
        }
    }

    static func epochMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    static func millis(_ d: Duration) -> Int64 { d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000 }
}
