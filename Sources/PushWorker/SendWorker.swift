import AMQP
import FoundationEssentials
import PushCore
import ServiceRuntime
import Synchronization

/// The send worker: `lanes` independent lanes on the job queue, each one event loop on its
/// consumer's thread (its consumer, its publishers, its HTTP/2 connections) with its own share
/// of the send window and job admission (`JobProcessor.share`). Each delivery is processed
/// concurrently (up to `prefetch` per lane) and acked only once every message it caused is
/// confirmed by the broker. Acks are coalesced: the consumer acks with `multiple` over contiguous
/// settled deliveries (`AckCoalescer`), so the broker sees one ack per batch instead of one per
/// job. A job runs on callbacks (its sends' answers, its publishes' confirms) with no task unless
/// something needs waiting out (a blocked broker, a publish to repeat).
///
/// A delivery whose FCM sends happened is never requeued for a publish failure: its outbound
/// messages are kept and published again, reconnecting the publisher if needed, until confirmed
/// (`OutboundPublisher`); meanwhile the delivery stays unacked. While the broker blocks
/// publishing (a resource alarm), deliveries not yet started wait; in-flight ones are kept.
///
/// A lost consumer connection is reopened with exponential backoff (its unacked deliveries come
/// back by themselves; the lane abandons them at once). On shutdown each lane cancels its
/// consumer, lets in-flight deliveries finish within `shutdownDeadline`, and closes: anything
/// unfinished stays unacked and the broker requeues it.
public final class SendWorker: Service {
    /// Tunables of the worker.
    public struct Configuration: Sendable {
        public var settings: AMQPSettings
        public var topology: Topology
        public var prefetch: UInt16 = 100
        /// Bytes of unacked jobs a lane aims to hold: its prefetch follows them, up to `prefetch`
        /// (`PrefetchSizer`); 0 keeps the prefetch fixed at `prefetch`.
        public var prefetchBytes: Int = 0
        /// The largest job body accepted (`--max-job-bytes`): the sized prefetch starts where
        /// even jobs this large fit `prefetchBytes`.
        public var largestJob: Int = JobProcessor.defaultMaxJobBytes
        public var lanes: Int = 1
        public var shutdownDeadline: Duration = .seconds(30)
        public var reconnectBackoff = Backoff(initial: .milliseconds(200), max: .seconds(30))
        /// Between rounds of publishing a job's unconfirmed messages again.
        public var republishBackoff = Backoff(initial: .milliseconds(200), max: .seconds(5))
        /// A publish unconfirmed this long (the broker not saying it is blocked) drops the publisher connection.
        public var confirmTimeout: Duration = .seconds(60)
        /// The urgent lane: consumes `topology.urgentJobsQueue` instead of the job queue (one lane,
        /// counted apart: not in the lanes gauge, not a consumer of the job queue's quota share).
        public var urgent = false

        /// The queue the lanes consume.
        public var queue: String { urgent ? topology.urgentJobsQueue : topology.jobsQueue }

        public init(settings: AMQPSettings, topology: Topology) {
            self.settings = settings
            self.topology = topology
        }
    }

    /// `--lanes auto`: one lane per processor the process may keep busy (a lane is one event
    /// loop on one thread), at most `mostAutomaticLanes`.
    public static func automaticLanes(_ budget: ProcessorBudget) -> Int {
        min(budget.processors, mostAutomaticLanes)
    }

    /// The most lanes `--lanes auto` runs: each holds three broker connections and its own
    /// HTTP/2 connections, and a large host without a CPU quota should not open hundreds.
    public static let mostAutomaticLanes = 8

    /// The prefetch when `--prefetch` is not given: the process's FCM window (`--max-in-flight`)
    /// shared by the lanes, so that the sends in flight, not the unacked jobs, bound throughput
    /// whatever FCM's latency. A job holds its slot until its messages are confirmed.
    public static func defaultPrefetch(maxInFlight: Int, lanes: Int) -> UInt16 {
        let lanes = max(1, lanes)
        return UInt16(clamping: max(1, (maxInFlight + lanes - 1) / lanes))
    }

    /// The `--prefetch-bytes` suggested for queues of large jobs (off by default, see
    /// docs/operations.md): 8 MiB, room for a full window of one-recipient jobs (~0.5 KB each)
    /// and for ~45 jobs of a thousand recipients (~180 KB each).
    public static let suggestedPrefetchBytes = 8 << 20

    /// How a lane sizes its prefetch; nil: fixed at `configuration.prefetch`.
    private var sizing: PrefetchSizer? {
        guard configuration.prefetchBytes > 0 else { return nil }
        return PrefetchSizer(budgetBytes: configuration.prefetchBytes, maxPrefetch: configuration.prefetch,
                             largestDelivery: configuration.largestJob)
    }

    public let configuration: Configuration
    public let processor: JobProcessor
    public let counters = WorkerCounters()
    public let metrics: WorkerMetrics
    /// Lanes consuming and publishers connected, for `/readyz`.
    public let status = WorkerStatus()
    private let logger: Logger

    public init(configuration: Configuration, processor: JobProcessor, logger: Logger, metrics: WorkerMetrics = WorkerMetrics()) {
        self.configuration = configuration
        self.processor = processor
        self.logger = logger
        self.metrics = metrics
    }

    /// Runs until `shutdown` is triggered and every lane has drained.
    public func run(until shutdown: ShutdownSignal) async {
        let lanes = max(1, configuration.lanes)
        if !configuration.urgent { metrics.lanes.set(lanes) }
        status.started(lanes: lanes)
        let watcher = Task { [status] in
            await shutdown.wait()
            status.stopping()
        }
        await withTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask { await self.runLane(lane, shutdown: shutdown) }
            }
        }
        watcher.cancel()
        status.stopped()
        logger.info(configuration.urgent ? "urgent lane stopped" : "worker stopped", counters.summary)
    }

    private func runLane(_ lane: Int, shutdown: ShutdownSignal) async {
        let log = logger.child(configuration.urgent ? "urgent" : "lane\(lane)")
        let processor = self.processor.share(lane: lane, of: max(1, configuration.lanes))
        let outbound = OutboundPublisher(settings: configuration.settings, confirmTimeout: configuration.confirmTimeout,
                                         backoff: configuration.republishBackoff, counters: counters, metrics: metrics, log: log)
        status.lane(lane, publisherConnected: { outbound.isConnected })
        let lifecycle = ConnectionLifecycle(backoff: configuration.reconnectBackoff, shutdown: shutdown)
        let sizing = self.sizing
        // A session fails (and backs off) only when it cannot connect; a lost consumer connection
        // reconnects at once.
        await lifecycle.run({
            counters.connectAttempts.add(1, ordering: .relaxed)
            try await outbound.connected()
            let tracker = InFlightTracker()
            // Each delivery is taken on the consumer's thread, as it is read (`take`), on the
            // session's one `Lane` (built at the first delivery: it needs the consumer).
            let session = Mutex<Lane?>(nil)
            let consumer = try await AMQPConsumer.start(settings: configuration.settings, queue: configuration.queue,
                                                        prefetch: configuration.prefetch, coalescingAcks: true, sizing: sizing,
                                                        bodyLimit: configuration.largestJob, handler: { delivery, consumer in
                let lane = session.withLock { lane in
                    if let lane { return lane }
                    let made = Lane(consumer: consumer, processor: processor, outbound: outbound, tracker: tracker, log: log)
                    lane = made
                    return made
                }
                self.take(delivery, on: lane)
            })
            log.info("consuming", ["queue": configuration.queue, "broker": configuration.settings.redactedURL,
                                   "prefetch": sizing.map { "\($0.initial) up to \($0.maxPrefetch), sized to \($0.budgetBytes) bytes" }
                                       ?? "\(configuration.prefetch)"])
            status.lane(lane, prefetch: { consumer.prefetch })
            status.lane(lane, consuming: true)
            let error = await consume(consumer, tracker: tracker, lifecycle: lifecycle, log: log)
            status.lane(lane, consuming: false)
            await consumer.close()
            // The session's lane holds the consumer, whose handler holds `session`: let go of it,
            // or each session that got a delivery keeps its consumer (and wake-up fd) forever.
            // Jobs still in flight hold the lane themselves.
            session.withLock { $0 = nil }
            if let error {
                counters.reconnects.add(1, ordering: .relaxed)
                metrics.consumerReconnects.increment()
                log.warning("consumer connection lost, reconnecting", ["error": "\(error)"])
            }
        }, onFailure: { error, backoff in
            log.warning("cannot connect, retrying", ["error": "\(error)", "in": "\(backoff)"])
        })
        await outbound.close()
    }

    /// Waits while the consumer consumes (its deliveries go to `take`) until it ends; returns
    /// the error that ended it (nil: clean shutdown), once the deliveries in flight drained.
    private func consume(_ consumer: AMQPConsumer, tracker: InFlightTracker, lifecycle: ConnectionLifecycle,
                         log: Logger) async -> (any Error)? {
        let watcher = lifecycle.watchShutdown { consumer.cancel() }
        defer { watcher.cancel() }
        var streamError: (any Error)?
        do {
            for try await _ in consumer.deliveries {}
        } catch {
            streamError = error
            // The channel is gone: no ack can land any more and the broker requeues every unacked
            // delivery. Publishing their results now would only duplicate them.
            tracker.abandon()
        }
        if await !tracker.drain(timeout: configuration.shutdownDeadline) {
            log.warning("deadline reached with deliveries in flight; they stay unacked and the broker requeues them")
        }
        return streamError
    }

    /// What a lane's jobs use of it: its consumer (whose thread is the lane's), its share of the
    /// processor, its publisher and its deliveries in flight. One per consumer session, shared by
    /// reference: each step of a job captures it, and a copy of the struct would retain every
    /// reference the processor holds.
    private final class Lane: Sendable {
        let consumer: AMQPConsumer
        let processor: JobProcessor
        let outbound: OutboundPublisher
        let tracker: InFlightTracker
        let log: Logger
        /// The lane's thread, its consumer's: every step of its jobs runs there (an answer that
        /// comes elsewhere, a permit freed or a publish repeated in a task, is handed back;
        /// after the consumer ended it runs where it came). Given up
        /// (`thread.hasGivenUp`) once the consumer ended or the tracker abandoned: its jobs then
        /// send and publish nothing more and leave their deliveries unacked.
        let thread: LaneThread

        init(consumer: AMQPConsumer, processor: JobProcessor, outbound: OutboundPublisher, tracker: InFlightTracker, log: Logger) {
            self.consumer = consumer
            self.processor = processor
            self.outbound = outbound
            self.tracker = tracker
            self.log = log
            thread = LaneThread.of(consumer, abandonedBy: tracker)
        }
    }

    /// Takes one delivery on the consumer's thread (the lane's): reads it and, once admitted,
    /// walks it from state to state (`LaneJobState`, `advance`) on that thread: a step given on
    /// another thread is handed back to it (`LaneThread`), the broker's verdict on its messages
    /// too, so that the ack is written there. A job holds no task while FCM answers nor while
    /// the broker confirms, whatever its number of targets; a task only waits out a blocked
    /// broker or repeats a failed publish.
    private func take(_ delivery: Delivery, on lane: Lane) {
        counters.deliveries.add(1, ordering: .relaxed)
        lane.tracker.enter()
        // A job waiting for the job admission is this callback, not a task: prefetched jobs of
        // many recipients cost their bytes while they wait.
        let intake = lane.processor.intake(body: delivery.body, declaredSize: delivery.declaredBodySize,
                                           headers: delivery.properties.headers)
        lane.processor.admit(intake) { admitted in
            let job = LaneJob(delivery: delivery, admitted: admitted)
            // Admitted at once, or by a permit another job gave back (on a publisher's thread).
            guard lane.thread.isHere else {
                return lane.thread.run { self.advance(job, .admitted(brokerBlocked: lane.outbound.isBlocked), on: lane) }
            }
            self.advance(job, .admitted(brokerBlocked: lane.outbound.isBlocked), on: lane)
        }
    }

    /// One delivery on its lane: what it carries and where it stands. A plain value that moves
    /// with the job from step to step (each step's callback takes it along).
    private struct LaneJob: Sendable {
        let delivery: Delivery
        let admitted: AdmittedJob
        var state = LaneJobState()
        /// Its messages and log record, set when planned (before `publish`, `ack` or `abandon`).
        private var plan: ProcessedJob?

        init(delivery: Delivery, admitted: AdmittedJob) {
            self.delivery = delivery
            self.admitted = admitted
        }

        /// Its messages and log record: asked only from `publishing` on, where its state says it
        /// was planned (the `planned` event is the one way out of `sending`).
        var processed: ProcessedJob {
            get {
                guard let plan else { preconditionFailure("a job in phase \(state.phase) has no plan yet") }
                return plan
            }
            set { plan = newValue }
        }
    }

    /// Advances `job` by `event` and takes the step its state names: the one place where a job
    /// moves on. Waits (an alarm, FCM's answers, the broker's confirms) end in the next event.
    private func advance(_ job: LaneJob, _ event: LaneJobState.Event, on lane: Lane) {
        var job = job
        switch job.state.advance(event) {
        case .waitOutAlarm:
            counters.jobTasks.add(1, ordering: .relaxed)
            Task { [job] in
                await lane.outbound.waitWhileBlocked(for: lane.thread)
                lane.thread.run { self.advance(job, .alarmPassed, on: lane) }
            }
        case .send:
            lane.processor.startSending(job.admitted, on: lane.thread) { [job] sent in
                var job = job
                let processed = lane.processor.conclude(job.admitted, sent)
                job.processed = processed
                let log = Self.jobLog(processed, lane.log)
                if log.isDebugEnabled { JobLogLines.processed(processed, redelivered: job.delivery.redelivered, log: log) }
                self.advance(job, .planned(laneGaveUp: lane.thread.hasGivenUp), on: lane)
            }
        case .publish:
            // From here on the sends happened: never requeue, publish until confirmed (or give up
            // only when the lane does, leaving the delivery unacked).
            counters.awaitingConfirm.add(1, ordering: .relaxed)
            // The verdict comes on the lane's loop publisher (its thread) or, after a failed round,
            // from a task: handed back, so that the ack and the job's end happen on the lane.
            lane.outbound.publish(job.processed.messages, for: lane.thread) { [job] confirmed in
                self.counters.awaitingConfirm.subtract(1, ordering: .relaxed)
                lane.thread.run { self.advance(job, .published(confirmed: confirmed), on: lane) }
            }
        case .ack:
            acked(job, on: lane)
        case .abandon:
            Self.jobLog(job.processed, lane.log).debug(event == .planned(laneGaveUp: true)
                ? "lane gave up before publishing; the delivery stays unacked and comes back"
                : "lane gave up before the broker confirmed; the delivery stays unacked and comes back")
            end(job, on: lane)
        }
    }

    /// The logger of a job's lines: its fields attached only when a debug line will be written
    /// (not per job otherwise).
    private static func jobLog(_ processed: ProcessedJob, _ log: Logger) -> Logger {
        log.isDebugEnabled ? log.with(processed.record.fields) : log
    }

    /// A job whose messages were all confirmed: acks its delivery, counts and logs it, then ends it.
    private func acked(_ job: LaneJob, on lane: Lane) {
        let processed = job.processed, messages = processed.messages
        counters.count(messages)
        metrics.count(messages, appID: processed.record.appLabel)
        lane.consumer.complete(job.delivery.deliveryTag)
        counters.acked.add(1, ordering: .relaxed)
        Self.jobLog(processed, lane.log).debug("published, confirmed and acked",
                                              ["messages": "\(messages.count)", "delivery_tag": "\(job.delivery.deliveryTag)"])
        JobLogLines.settled(messages, record: processed.record, log: lane.log)
        end(job, on: lane)
    }

    /// A job's end, acked or abandoned: gives its admission back (held until settled, so that
    /// while the broker is slow to confirm the jobs behind wait unsent instead of piling up
    /// their results here) and leaves the lane's deliveries in flight.
    private func end(_ job: LaneJob, on lane: Lane) {
        lane.processor.release(job.admitted)
        lane.tracker.leave()
    }
}
