import AMQP
import FoundationEssentials
import PushCore
import Synchronization
import OSThread

/// Turns one job delivery into the messages it causes, in three steps:
/// - `intake` (synchronous): decode, find the App ID, check `not_after`, prepare the job's shared part;
/// - `admit`: wait for the job's share of the job admission, as a callback rather than a task;
/// - `startSending`: compose and send its targets one by one through the send window (the sends
///   run concurrently), from callbacks (a `TargetWalk`), then `conclude`: plan, and express the
///   plan as results, a retry copy and dead-letter copies (`process` does both in a task).
/// It never throws: bad input is data (a dead-letter copy with a reason), so the worker keeps
/// consuming whatever arrives.
public struct JobProcessor: Sendable {
    public let catalog: AppCatalog
    public var topology: Topology {
        didSet { retryQueues = topology.allRetryQueues }
    }
    /// The retry tiers' queues: a delivery that expired in one of them is a retry copy.
    private var retryQueues: [String]
    public var planner: JobPlanner
    public var composer = MessageComposer()
    public var clock: @Sendable () -> Timestamp = { Timestamp.now() }
    /// Bodies larger than this are dead-lettered unparsed as `INVALID_JOB` (`worker --max-job-bytes`).
    public var maxJobBytes = JobProcessor.defaultMaxJobBytes
    /// 1 MiB: far above the largest valid job (1 000 recipients with their data).
    public static let defaultMaxJobBytes = 1 << 20
    /// When set, each target of a job takes a permit before it is composed and gives it back
    /// once sent (a `PermitPool`): what is composed and waiting for FCM stays within the FCM window
    /// (the worker: `--max-in-flight`, split between its lanes by `share`).
    public var sendWindow: PermitPool?
    /// Counts composed messages not yet sent, with their high-water mark (tests; nil otherwise).
    var unsentGauge: HighWaterGauge?
    /// When set, a job takes `min(targets, capacity)` permits of it (`admit`) before its first
    /// target is composed and gives them back once it is settled (`release`): the jobs being sent
    /// or published at once hold at most `capacity` recipients (the worker: twice
    /// `--max-in-flight`, split between its lanes by `share`), so prefetched jobs of many
    /// recipients go a few at a time instead of all advancing together, each holding its
    /// per-recipient state (and then its results, while the broker is slow to confirm) to the
    /// end. A job larger than the capacity goes alone.
    public var jobAdmission: PermitPool?
    /// Counts jobs admitted and not released, with their high-water mark (tests; nil otherwise).
    var admittedGauge: HighWaterGauge?
    /// The processor of the urgent lane (`Topology.urgentJobsQueue`): every job it handles is
    /// high priority, whatever its body says, so its retry copies take the urgent ladder and its
    /// dead letters say `"priority": "high"` (a replay puts them back on the urgent queue).
    public var urgent = false
    /// The fleet's cancels and App ID pauses (`FleetControl`), asked of every job before it is
    /// sent; nil: none (tests of the pipeline alone).
    public var control: FleetControl?
    /// The longest a paused App ID's job waits in a retry tier before it is looked at again.
    static let longestPausedWait: Duration = .seconds(30)

    public init(catalog: AppCatalog, topology: Topology, planner: JobPlanner = JobPlanner()) {
        self.catalog = catalog
        self.topology = topology
        retryQueues = topology.allRetryQueues
        self.planner = planner
    }

    /// Lane `lane`'s processor among `lanes`: its even share of the send window and of the job
    /// admission, pools of its own, so that a permit freed by one of the lane's answers lets in a
    /// job of the same lane, on its thread (a lane's work never runs on another lane's thread).
    /// The shares add up to the whole; one lane takes the pools as they are.
    public func share(lane: Int, of lanes: Int) -> JobProcessor {
        guard lanes > 1 else { return self }
        func part(_ pool: PermitPool?) -> PermitPool? {
            pool.map { PermitPool(capacity: $0.capacity / lanes + (lane < $0.capacity % lanes ? 1 : 0)) }
        }
        var share = self
        share.sendWindow = part(sendWindow)
        share.jobAdmission = part(jobAdmission)
        return share
    }

    /// A processor for a fixed set of App IDs (no reload).
    public init(registry: AppRegistry, sender: any PushSender, topology: Topology, planner: JobPlanner = JobPlanner()) {
        self.init(catalog: AppCatalog(.init(registry: registry, sender: sender)), topology: topology, planner: planner)
    }

    /// The messages to publish for a delivery of `body` carrying `headers`.
    public func process(body: Data, headers: AMQPTable) async -> [OutboundMessage] {
        await processJob(body: body, headers: headers).messages
    }

    /// The messages to publish for a delivery, with what the worker's log lines and metrics say
    /// about the job (so that it never reads back the headers it wrote): `intake`, `admit` and
    /// `process` in a row.
    ///
    /// `lane.hasGivenUp` is read once the job got its place in the send window: true (the lane
    /// gave up on the delivery meanwhile) returns no messages and sends nothing.
    public func processJob(body: Data, headers: AMQPTable, on lane: LaneThread = .anywhere) async -> ProcessedJob {
        let intake = intake(body: body, headers: headers)
        let admitted = await withCheckedContinuation { (c: CheckedContinuation<AdmittedJob, Never>) in
            admit(intake) { c.resume(returning: $0) }
        }
        defer { release(admitted) }
        return await process(admitted, on: lane)
    }

    /// Reads and checks a delivery of `body` carrying `headers`, synchronously: decode, App ID,
    /// `not_after`, the job's shared part. Bad input is settled here as messages.
    /// `declaredSize`, when larger than `body.count`, says `body` is only the start of a body
    /// the consumer did not hold whole (over `maxJobBytes`).
    public func intake(body: Data, declaredSize: Int? = nil, headers: AMQPTable) -> JobIntake {
        let history = FailureHeaders.trustedHistory(headers, retryQueues: retryQueues)
        var record = JobRecord(attempt: history.attempt)
        let apps = catalog.current
        let preparation = prepare(body: body, declaredSize: max(declaredSize ?? 0, body.count), history: history,
                                  registry: apps.registry, record: &record)
        return JobIntake(history: history, record: record, preparation: preparation, sender: apps.sender)
    }

    /// Hands the job to `start` once the job admission has room for its recipients: at once
    /// (on this thread) when it has, or when the job has nothing to send; otherwise from the
    /// `release` that makes room. A job waiting for its turn holds no task, only `start`.
    /// The caller gives the admission back with `release` once the job is settled (its messages
    /// confirmed, or the delivery given up).
    public func admit(_ intake: JobIntake, then start: @escaping @Sendable (AdmittedJob) -> Void) {
        guard let admission = jobAdmission, intake.weight > 0 else {
            start(AdmittedJob(intake: intake, permits: 0, admission: nil))
            return
        }
        let gauge = admittedGauge
        admission.acquire(intake.weight) { permits in
            gauge?.increment()
            start(AdmittedJob(intake: intake, permits: permits, admission: admission))
        }
    }

    /// Gives back what `admit` took, letting in the jobs waiting that now fit. Once per admitted job.
    public func release(_ admitted: AdmittedJob) {
        guard admitted.permits > 0 else { return }
        admittedGauge?.decrement()
        admitted.admission?.release(admitted.permits)
    }

    /// Composes and sends the job's targets (`startSending`) and waits for the last answer, in
    /// the caller's task; then `conclude`.
    public func process(_ admitted: AdmittedJob, on lane: LaneThread = .anywhere) async -> ProcessedJob {
        let sent = await withCheckedContinuation { continuation in
            startSending(admitted, on: lane) { continuation.resume(returning: $0) }
        }
        return conclude(admitted, sent)
    }

    /// Composes and sends an admitted job's targets one by one, each after its turn at the
    /// project's rate and a permit of the send window, given back once its send answered: what
    /// is composed and not yet sent stays within the window however many recipients the job has.
    /// Sends run concurrently; the FCM client bounds what is really in flight. Nothing waits as
    /// a task meanwhile (a `TargetWalk`); `sent` gets what the sends gave, for `conclude`, on
    /// `lane` (called there; turns and answers given on other threads are handed back to it), or
    /// from the thread of the last answer for `.anywhere`. A settled job has nothing to send:
    /// `sent` at once.
    ///
    /// The lane given up (`lane.hasGivenUp`) before a target is sent leaves it and the rest unsent
    /// (planned as not sent); before the first one, nothing is sent and `conclude` gives no
    /// messages. A job the fleet cancels while its targets go out sends no more: the rest end
    /// `cancelled` in its plan, never sent twice.
    public func startSending(_ admitted: AdmittedJob, on lane: LaneThread = .anywhere, sent: @escaping @Sendable (SentJob) -> Void) {
        guard case .ready(let ready) = admitted.intake.preparation else { return sent(SentJob(sends: nil)) }
        let control = control
        let context = TargetWalk.Context(ready: ready, sender: admitted.intake.sender, window: sendWindow,
                                         unsentGauge: unsentGauge, urgent: isUrgent(ready.job), lane: lane,
                                         cancelled: { Self.isCancelled(ready.job, control: control) })
        TargetWalk.start(context) { sent(SentJob(sends: $0)) }
    }

    /// The messages of an admitted job once sent (`sent`, from `startSending`): its
    /// plan as results, a retry copy and dead-letter copies; none when the lane gave up before
    /// the first send. A settled job's messages are its intake's.
    public func conclude(_ admitted: AdmittedJob, _ sent: SentJob) -> ProcessedJob {
        let intake = admitted.intake
        var record = intake.record
        let messages: [OutboundMessage]
        switch intake.preparation {
        case .settled(let settled):
            messages = settled
        case .ready(let ready):
            guard let (composed, delivered) = sent.sends else { return ProcessedJob(messages: [], record: record) }
            messages = planned(ready.job, attempt: record.attempt, composed: composed, delivered: delivered, history: intake.history)
        }
        record.code = messages.first { $0.kind == .deadLetter }?.label
        return ProcessedJob(messages: messages, record: record)
    }

    /// Decodes the job, finds its App ID, checks `not_after` and prepares its shared part.
    @inline(never)
    private func prepare(body: Data, declaredSize: Int, history: DeliveryHistory, registry: AppRegistry,
                         record: inout JobRecord) -> Preparation {
        let now = clock()
        if declaredSize > maxJobBytes {
            let truncated = declaredSize > body.count
            var letter = deadLetter(body: body, code: .invalidJob,
                                    message: "the job body is \(declaredSize) bytes, over the limit of \(maxJobBytes) bytes (--max-job-bytes); not parsed"
                                        + (truncated ? "; only its first \(body.count) bytes are kept" : ""),
                                    history: history, now: now)
            if truncated { letter.headers[DeadLetterHeader.truncatedFrom] = .int(Int64(declaredSize)) }
            return .settled([letter])
        }
        let job: SendJob
        do {
            job = try SendJob.decode(body)
        } catch {
            record.identify(unparsed: body)
            return .settled([deadLetter(body: body, code: .invalidJob, message: error.description, history: history, now: now)])
        }
        record.identify(job, known: registry[job.appID] != nil)
        guard let app = registry[job.appID] else {
            return .settled(deadLettered(job, body: body, code: .unknownApp,
                                         message: "unknown App ID \"\(job.appID)\"; add it to the App ID configuration, then replay",
                                         history: history, now: now))
        }
        if let notAfter = job.notAfter, notAfter < now {
            return .settled(outbound(planner.expired(job, attempts: history.attemptsMade, now: now), history: history, now: now))
        }
        switch control?.verdict(for: job) {
        case .cancel(let cancel)?:
            return .settled(outbound(planner.cancelled(job, by: cancel, attempts: history.attemptsMade, now: now), history: history, now: now))
        case .pause(let pause)?:
            let plan = planner.paused(job, by: pause, attempts: history.attemptsMade, nowMillis: FleetControl.epochMillis(),
                                      longestWait: Self.longestPausedWait)
            return .settled(outbound(plan, history: history, now: now))
        case nil: break
        }
        do {
            return .ready(ReadyJob(job: job, app: app, prepared: try composer.prepare(job, app: app)))
        } catch {
            return .settled(deadLettered(job, body: body, code: .invalidJob, message: error.description, history: history, now: now))
        }
    }

    /// The plan of a sent job, as messages.
    @inline(never)
    private func planned(_ job: SendJob, attempt: Int, composed: [CompositionOutcome], delivered: [Int: DeliveryOutcome],
                         history: DeliveryHistory) -> [OutboundMessage] {
        var random = SystemRandomNumberGenerator()
        let now = clock()
        var plan = planner.plan(job: job, attempt: attempt, composed: composed, delivered: delivered,
                                firstFailedAt: history.firstFailedAt, possiblyDelivered: history.possiblyDelivered,
                                now: now, random: &random)
        // Cancelled meanwhile: what would be retried (not sent, or failed for now) ends here.
        if let retry = plan.retry, case .cancel(let cancel)? = control?.verdict(for: job) {
            plan.results += planner.cancelled(retry.job, by: cancel, attempts: retry.attempts, now: now).results
            plan.retry = nil
        }
        return outbound(plan, history: history, now: now)
    }

    /// The plan as messages: results, the retry copy and dead-letter copies, their `push-*`
    /// headers written from the delivery's `history` (`FailureHeaders`).
    func outbound(_ plan: JobPlan, history: DeliveryHistory, now: Timestamp) -> [OutboundMessage] {
        var messages = results(plan.results, history: history)
        if let retry = plan.retry,
           let tier = topology.retryTier(forDelaySeconds: retry.delay.seconds, urgent: urgent || retry.job.priority == .high) {
            var retried = history  // the copy carries this attempt's possibly-delivered mark too, as a dead letter does
            retried.possiblyDelivered = retried.possiblyDelivered || retry.possiblyDelivered
            messages.append(OutboundMessage(exchange: topology.retryExchange, routingKey: tier.routingKey,
                                            body: Data(prioritized(retry.job).encoded().encodedBytes()),
                                            headers: FailureHeaders.retry(attempts: retry.attempts, history: retried, now: now),
                                            kind: .retry, label: tier.name, reason: "next attempt \(retry.attempts + 1): \(retry.reason)"))
        }
        for dead in plan.deadLetters {
            // This delivery's attempt counts: the job was tried.
            var tried = history.afterThisAttempt
            tried.possiblyDelivered = tried.possiblyDelivered || dead.possiblyDelivered
            messages.append(deadLetter(body: Data(prioritized(dead.job).encoded().encodedBytes()), code: dead.code, message: dead.message,
                                       history: tried, now: now, job: dead.job))
        }
        return messages
    }

    /// True when the fleet (`control`) cancelled `job` (its campaign or itself) since it was taken.
    private static func isCancelled(_ job: SendJob, control: FleetControl?) -> Bool {
        if case .cancel? = control?.verdict(for: job) { return true }
        return false
    }

    /// True for a job sent ahead of paced campaign sends: the urgent lane's, or one that says
    /// `"priority": "high"` wherever it came from.
    private func isUrgent(_ job: SendJob) -> Bool { urgent || job.priority == .high }

    /// `job`, marked high priority when this is the urgent lane's processor.
    private func prioritized(_ job: SendJob) -> SendJob {
        guard urgent, job.priority != .high else { return job }
        var job = job
        job.priority = .high
        return job
    }

    /// A decoded job that goes to the DLQ as a whole, its body byte for byte, with a
    /// `dead_lettered` result for each of its targets.
    private func deadLettered(_ job: SendJob, body: Data, code: DeadLetterCode, message: String, history: DeliveryHistory,
                              now: Timestamp) -> [OutboundMessage] {
        results(planner.deadLettered(job, code: code, message: message, attempts: history.attemptsMade, now: now), history: history)
            + [deadLetter(body: body, code: code, message: message, history: history, now: now, job: job)]
    }

    /// Results as messages for the results exchange, each stamped with the job's replay count
    /// (`push-replays`), which orders the results of one `mn_message_id` (contract), and its App
    /// ID as the stream's filter value (`x-stream-filter-value`: `StreamReader`).
    private func results(_ results: [SendResult], history: DeliveryHistory) -> [OutboundMessage] {
        results.map { result in
            var result = result
            result.replays = history.replays
            return OutboundMessage.result(result, exchange: topology.resultsExchange)
        }
    }

    /// A dead-letter copy of `body` recording `history`'s attempts (`FailureHeaders.deadLetter`).
    /// High priority (`urgent` lane, or `job` says so) adds `push-priority: high`, which a replay follows.
    func deadLetter(body: Data, code: DeadLetterCode, message: String, history: DeliveryHistory, now: Timestamp,
                    job: SendJob? = nil) -> OutboundMessage {
        var headers = FailureHeaders.deadLetter(code: code.rawValue, message: message, history: history, now: now)
        if urgent || job?.priority == .high { headers[DeadLetterHeader.priority] = .string(JobPriority.high.rawValue) }
        return OutboundMessage(exchange: topology.deadLetterExchange, routingKey: topology.deadLetterQueue, body: body, headers: headers,
                               kind: .deadLetter, label: code.rawValue, reason: FailureHeaders.reason(message))
    }
}
