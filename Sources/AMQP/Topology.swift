/// The broker topology (docs/decisions/0057-topology-is-a-pure-value.md) as a pure value (no
/// I/O): exchanges, queues with their arguments, and bindings, named from a prefix. Declare it
/// with `declare(on:)`.
///
/// With prefix `push`:
/// - `push.jobs` direct exchange → quorum queue `push.jobs` (binding key `job`): DLX `push.dlx`,
///   `x-dead-letter-strategy: at-least-once`, `x-overflow: reject-publish`, `x-delivery-limit`
///   (20: the crash-loop guard, the same on every RabbitMQ line).
///   Upstream publishes jobs to exchange `push.jobs` with routing key `job`; high-priority jobs
///   with `job.high`, to quorum queue `push.jobs.high` (same arguments), which every worker
///   consumes on an urgent lane with capacity of its own.
/// - `push.retry` direct exchange → one quorum queue per tier, `push.retry.5s` … `push.retry.1h`
///   (binding key = tier name), each with one `x-message-ttl` and dead-lettering (at-least-once)
///   back to `push.jobs` with routing key `job`; the urgent ladder `push.retry.high.5s` … (binding
///   key `high.5s` …) dead-letters back with `job.high`.
/// - `push.dlx` fanout exchange → quorum queue `push.jobs.dlq` (what a person must look at),
///   with no delivery limit on any line (`Queue.unlimitedDeliveries`).
/// - `push.results` topic exchange → stream `push.results.stream` bound `#` (routing key
///   `<app_id>.<outcome>`), with retention by age and size (`ResultsRetention`). Every reader
///   (the events consumer, `push-connector results`, upstream) reads it from its own offset.
/// - `push.events` fanout exchange → quorum queue `push.events` (`x-delivery-limit` as the job
///   queue's), dead-lettering through the default exchange to quorum queue `push.events.dlq`
///   (no delivery limit, as the jobs' DLQ).
///
/// - `push.control` fanout exchange, no queue of its own: each worker binds an exclusive,
///   server-named queue to it and hears the fleet's quota pauses there (`ControlChannel`).
/// - stream `push.control.log` (31 days): the fleet's cancels and App ID pauses
///   (`push-connector cancel`, `pause`), read by every worker from its start.
///
/// Earlier versions bound `push.results` to the quorum queues `push.results` and
/// `push.events.results` (`legacyResultsQueues`); `push-connector topology migrate-results`
/// moves what they hold into the stream.
public struct Topology: Sendable, Equatable {
    /// An exchange to declare (always durable).
    public struct Exchange: Sendable, Equatable {
        public var name: String
        public var type: String
    }

    /// A queue to declare (always durable) with its `x-*` arguments.
    public struct Queue: Sendable, Equatable {
        public var name: String
        /// The arguments on every RabbitMQ line.
        public var arguments: AMQPTable
        /// A dead-letter queue: nothing behind it catches what RabbitMQ drops, so it gets
        /// `x-delivery-limit: -1` (no limit) where the broker takes it (`BrokerFeatures`, 4.0+,
        /// whose default is 20). Left out on 3.x, which has no default limit and would take -1 as
        /// "drop at the first return".
        public var unlimitedDeliveries = false
        /// Arguments this version adds to a queue earlier versions declared without them: a queue
        /// found without them is kept as it is (`DeclarationReport.keptWithout`).
        public var addedLater: Set<String> = []

        public init(name: String, arguments: AMQPTable, unlimitedDeliveries: Bool = false, addedLater: Set<String> = []) {
            self.name = name
            self.arguments = arguments
            self.unlimitedDeliveries = unlimitedDeliveries
            self.addedLater = addedLater
        }

        /// The arguments to declare on a broker that can do `features`.
        public func arguments(on features: BrokerFeatures) -> AMQPTable {
            guard unlimitedDeliveries, features.unlimitedDeliveryLimit else { return arguments }
            return arguments.merging(["x-delivery-limit": .int(-1)]) { _, limit in limit }
        }

        /// The arguments of a queue an earlier version declared (without `addedLater`).
        public func earlierArguments(on features: BrokerFeatures) -> AMQPTable {
            arguments(on: features).filter { !addedLater.contains($0.key) }
        }
    }

    /// A queue-to-exchange binding.
    public struct Binding: Sendable, Equatable {
        public var queue: String
        public var exchange: String
        public var routingKey: String
    }

    /// How long and how much the results stream keeps (`x-max-age`, `x-max-length-bytes`,
    /// `x-stream-max-segment-size-bytes`). RabbitMQ drops whole segments once they are past
    /// either limit, so the stream holds a little more than the limits at times.
    public struct ResultsRetention: Sendable, Equatable {
        /// `x-max-age`: a number and a unit, Y M D h m s (`7D`, `36h`).
        public var maxAge: String
        public var maxBytes: Int64
        public var segmentBytes: Int64

        /// 7 days, 20 GB, segments of 100 MB.
        public init(maxAge: String = "7D", maxBytes: Int64 = 20_000_000_000, segmentBytes: Int64 = 100_000_000) {
            self.maxAge = maxAge
            self.maxBytes = maxBytes
            self.segmentBytes = segmentBytes
        }

        /// True when `text` is an `x-max-age` RabbitMQ accepts: a positive whole number and one
        /// of the units Y, M, D, h, m, s.
        public static func isValidMaxAge(_ text: String) -> Bool {
            guard let unit = text.last, "YMDhms".contains(unit), let n = Int(text.dropLast()) else { return false }
            return n > 0 && text.dropLast().allSatisfy { $0 >= "0" && $0 <= "9" }
        }
    }

    /// One delay tier of the retry ladder.
    public struct RetryTier: Sendable, Equatable {
        /// `5s`, `30s`, `2m`, `10m`, `1h` …
        public var name: String
        public var delaySeconds: Int
        public var queue: String
        /// Publish to `retryExchange` with this routing key to delay a job by `delaySeconds`:
        /// the name (`30s`), `high.30s` for the ladder of high-priority jobs.
        public var routingKey: String
    }

    public let prefix: String
    public let jobsExchange: String
    public let jobsQueue: String
    /// Routing key of jobs on `jobsExchange` (also used by retry queues dead-lettering back).
    public let jobsRoutingKey: String
    public let retryExchange: String
    /// Sorted by delay, shortest first.
    public let retryTiers: [RetryTier]
    /// The quorum queue of high-priority jobs (`<prefix>.jobs.high`, bound to `jobsExchange`
    /// with `urgentRoutingKey`), consumed by every worker's urgent lane.
    public let urgentJobsQueue: String
    /// `job.high`: the routing key of a job with `"priority": "high"`.
    public let urgentRoutingKey: String
    /// The retry ladder of high-priority jobs (`<prefix>.retry.high.30s`, …): the same delays,
    /// dead-lettering back to `urgentJobsQueue`, so a retried urgent job stays urgent.
    public let urgentRetryTiers: [RetryTier]
    public let deadLetterExchange: String
    public let deadLetterQueue: String
    public let resultsExchange: String
    /// The stream every result lands in (bound `#` to `resultsExchange`).
    public let resultsStream: String
    public let resultsRetention: ResultsRetention
    public let eventsExchange: String
    public let eventsQueue: String
    public let eventsDeadLetterQueue: String
    /// Fanout exchange of the workers' control messages (quota pauses).
    public let controlExchange: String
    /// The fleet's durable control log, a stream (`<prefix>.control.log`): cancels and App ID
    /// pauses, published to it through the default exchange; every worker reads it from the start
    /// of its retention (`controlLogRetention`), so one started later knows them too.
    public let controlLog: String
    /// `x-max-age` of the control log: longer than any cancel or pause lasts.
    public static let controlLogRetention = "31D"
    /// The longest a cancel or pause may last (within the log's retention).
    public static let longestControl: Duration = .seconds(30 * 86_400)
    /// The quorum queues earlier versions bound `#` to `resultsExchange` (`<prefix>.results`,
    /// `<prefix>.events.results`); not declared, only looked for.
    public let legacyResultsQueues: [String]

    public let exchanges: [Exchange]
    public let queues: [Queue]
    public let bindings: [Binding]

    /// - Parameters:
    ///   - prefix: first part of every name (`push` gives `push.jobs`, …).
    ///   - retryDelaysSeconds: one TTL queue per delay (duplicates and non-positive values ignored).
    ///   - deliveryLimit: `x-delivery-limit` of the job and events queues, a guard against crash loops.
    ///   - resultsRetention: retention of the results stream when it is created.
    public init(prefix: String = "push", retryDelaysSeconds: [Int] = [5, 30, 120, 600, 3600],
                deliveryLimit: Int = 20, resultsRetention: ResultsRetention = ResultsRetention()) {
        self.prefix = prefix
        jobsExchange = "\(prefix).jobs"
        jobsQueue = "\(prefix).jobs"
        jobsRoutingKey = "job"
        retryExchange = "\(prefix).retry"
        deadLetterExchange = "\(prefix).dlx"
        deadLetterQueue = "\(prefix).jobs.dlq"
        resultsExchange = "\(prefix).results"
        resultsStream = "\(prefix).results.stream"
        self.resultsRetention = resultsRetention
        eventsExchange = "\(prefix).events"
        eventsQueue = "\(prefix).events"
        eventsDeadLetterQueue = "\(prefix).events.dlq"
        controlExchange = "\(prefix).control"
        controlLog = "\(prefix).control.log"
        legacyResultsQueues = ["\(prefix).results", "\(prefix).events.results"]
        urgentJobsQueue = "\(prefix).jobs.high"
        urgentRoutingKey = "job.high"
        let retryExchange = self.retryExchange
        let delays = Set(retryDelaysSeconds.filter { $0 > 0 }).sorted()
        retryTiers = delays.map { delay in
            let name = Self.tierName(delay)
            return RetryTier(name: name, delaySeconds: delay, queue: "\(retryExchange).\(name)", routingKey: name)
        }
        urgentRetryTiers = delays.map { delay in
            let name = Self.tierName(delay)
            return RetryTier(name: name, delaySeconds: delay, queue: "\(retryExchange).high.\(name)", routingKey: "high.\(name)")
        }

        let quorum: AMQPTable = ["x-queue-type": "quorum"]
        let atLeastOnce: AMQPTable = ["x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"]
        exchanges = [
            Exchange(name: jobsExchange, type: "direct"),
            Exchange(name: retryExchange, type: "direct"),
            Exchange(name: deadLetterExchange, type: "fanout"),
            Exchange(name: resultsExchange, type: "topic"),
            Exchange(name: eventsExchange, type: "fanout"),
            Exchange(name: controlExchange, type: "fanout"),
        ]
        let jobQueueArguments = quorum.merging(atLeastOnce) { a, _ in a }.merging([
            "x-dead-letter-exchange": .string(deadLetterExchange),
            "x-delivery-limit": .int(Int64(deliveryLimit)),
        ]) { a, _ in a }
        var queues = [
            Queue(name: jobsQueue, arguments: jobQueueArguments),
            Queue(name: urgentJobsQueue, arguments: jobQueueArguments),
            Queue(name: deadLetterQueue, arguments: quorum, unlimitedDeliveries: true, addedLater: ["x-delivery-limit"]),
            Queue(name: resultsStream, arguments: [
                "x-queue-type": "stream",
                "x-max-age": .string(resultsRetention.maxAge),
                "x-max-length-bytes": .int(resultsRetention.maxBytes),
                "x-stream-max-segment-size-bytes": .int(resultsRetention.segmentBytes),
            ]),
            Queue(name: controlLog, arguments: ["x-queue-type": "stream", "x-max-age": .string(Self.controlLogRetention)]),
            Queue(name: eventsQueue, arguments: quorum.merging(atLeastOnce) { a, _ in a }.merging([
                "x-dead-letter-exchange": "",
                "x-dead-letter-routing-key": .string(eventsDeadLetterQueue),
                "x-delivery-limit": .int(Int64(deliveryLimit)),
            ]) { a, _ in a }, addedLater: ["x-delivery-limit"]),
            Queue(name: eventsDeadLetterQueue, arguments: quorum, unlimitedDeliveries: true, addedLater: ["x-delivery-limit"]),
        ]
        var bindings = [
            Binding(queue: jobsQueue, exchange: jobsExchange, routingKey: jobsRoutingKey),
            Binding(queue: urgentJobsQueue, exchange: jobsExchange, routingKey: urgentRoutingKey),
            Binding(queue: deadLetterQueue, exchange: deadLetterExchange, routingKey: ""),
            Binding(queue: resultsStream, exchange: resultsExchange, routingKey: "#"),
            Binding(queue: eventsQueue, exchange: eventsExchange, routingKey: ""),
        ]
        let (normalKey, urgentKey) = (jobsRoutingKey, urgentRoutingKey)
        let ladders = retryTiers.map { ($0, normalKey) } + urgentRetryTiers.map { ($0, urgentKey) }
        for (tier, backTo) in ladders {
            queues.append(Queue(name: tier.queue, arguments: quorum.merging(atLeastOnce) { a, _ in a }.merging([
                "x-message-ttl": .int(Int64(tier.delaySeconds) * 1000),
                "x-dead-letter-exchange": .string(jobsExchange),
                "x-dead-letter-routing-key": .string(backTo),
            ]) { a, _ in a }))
            bindings.append(Binding(queue: tier.queue, exchange: retryExchange, routingKey: tier.routingKey))
        }
        self.queues = queues
        self.bindings = bindings
    }

    /// The tier to use for a wanted delay: the shortest tier at least as long, else the longest;
    /// of the urgent ladder for a high-priority job.
    public func retryTier(forDelaySeconds delay: Double, urgent: Bool = false) -> RetryTier? {
        let tiers = urgent ? urgentRetryTiers : retryTiers
        return tiers.first { Double($0.delaySeconds) >= delay } ?? tiers.last
    }

    /// Where a job is published: `jobsRoutingKey`, or `urgentRoutingKey` for a high-priority one.
    public func jobsRoutingKey(urgent: Bool) -> String { urgent ? urgentRoutingKey : jobsRoutingKey }

    /// Every retry tier's queue, both ladders.
    public var allRetryQueues: [String] { (retryTiers + urgentRetryTiers).map(\.queue) }

    /// `5s`, `2m`, `1h`, `90s` (exact units only).
    static func tierName(_ seconds: Int) -> String {
        if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }
}
