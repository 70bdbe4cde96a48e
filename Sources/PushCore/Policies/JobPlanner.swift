/// A job, or part of it, to dead-letter with its reason.
public struct DeadLetterPlan: Sendable, Equatable {
    public var job: SendJob
    public var code: DeadLetterCode
    public var message: String
    /// An attempt timed out after its request was sent whole (`push-possibly-delivered`).
    public var possiblyDelivered = false
}

/// A job reduced to the recipients still to send, and how long it waits first.
public struct RetryPlan: Sendable, Equatable {
    public var job: SendJob
    /// At least this long; the pipeline picks the retry tier queue from it.
    public var delay: Duration
    /// Attempts made so far (the copy's next attempt is `attempts + 1`).
    public var attempts: Int
    /// An attempt at one of the copy's recipients timed out after its request was sent whole.
    public var possiblyDelivered = false
    /// Why: the codes of the failures that made the retry, and the first one's message
    /// (`OAUTH_UNAVAILABLE (HTTP 500): token endpoint failed (HTTP 500)`), for the log line.
    public var reason: String = ""
}

/// Everything one attempt at a job leads to: results to publish (a `dead_lettered` one for every
/// target of a dead-letter copy), at most one retry copy, and dead-letter copies grouped by
/// reason. The delivery is acked once all of it is confirmed.
public struct JobPlan: Sendable, Equatable {
    public var results: [SendResult] = []
    public var retry: RetryPlan?
    public var deadLetters: [DeadLetterPlan] = []

    public init(results: [SendResult] = [], retry: RetryPlan? = nil, deadLetters: [DeadLetterPlan] = []) {
        self.results = results
        self.retry = retry
        self.deadLetters = deadLetters
    }
}

/// Decides what an attempt at a job leads to without any I/O: which recipients
/// have a final result, which are retried and when, which are dead-lettered and why.
public struct JobPlanner: Sendable {
    /// The transport's code for a request sent whole that got no answer in time.
    public static let timeoutAfterSendCode = "TRANSPORT_TIMEOUT_AFTER_SEND"

    public var policy: RetryPolicy

    public init(policy: RetryPolicy = RetryPolicy()) {
        self.policy = policy
    }

    /// The plan when the job is past its `not_after`: every target ends `expired`.
    public func expired(_ job: SendJob, attempts: Int, now: Timestamp) -> JobPlan {
        let results = targets(of: job).map { index, target in
            SendResult(jobID: job.jobID, appID: job.appID, mnMessageID: MessageID.resolve(job: job, recipientIndex: index),
                       campaign: job.campaign, target: target, outcome: .expired,
                       error: ResultError(code: "EXPIRED", message: "not sent: past not_after \(job.notAfter?.description ?? "")"),
                       attempts: attempts, completedAt: now)
        }
        return JobPlan(results: results)
    }

    /// The plan when the job's campaign (or the job) is cancelled: every target ends `cancelled`,
    /// with the cancel's id and reason.
    public func cancelled(_ job: SendJob, by cancel: ControlRecord, attempts: Int, now: Timestamp) -> JobPlan {
        let message = "not sent: cancelled (\(cancel.id))" + (cancel.reason.map { ": \($0)" } ?? "")
        let results = targets(of: job).map { index, target in
            SendResult(jobID: job.jobID, appID: job.appID, mnMessageID: MessageID.resolve(job: job, recipientIndex: index),
                       campaign: job.campaign, target: target, outcome: .cancelled,
                       error: ResultError(code: "CANCELLED", message: String(message.prefix(1000))), attempts: attempts, completedAt: now)
        }
        return JobPlan(results: results)
    }

    /// The plan when the job's App ID is paused: the whole job waits in a retry tier (at most
    /// `longestWait`, less when the pause ends sooner) and comes back, its attempt not counted.
    public func paused(_ job: SendJob, by pause: ControlRecord, attempts: Int, nowMillis: Int64,
                       longestWait: Duration = .seconds(60)) -> JobPlan {
        let remaining = Duration.milliseconds(max(1_000, pause.until - nowMillis))
        return JobPlan(retry: RetryPlan(job: job, delay: min(remaining, longestWait), attempts: attempts,
                                        reason: "App ID paused (\(pause.id))" + (pause.reason.map { ": \($0)" } ?? "")))
    }

    /// One `dead_lettered` result per target of `job` (a job, or the part of one, that goes to the
    /// DLQ), with the dead-letter code and reason as its error: upstream learns that those
    /// recipients got nothing (contract: docs/contracts.md).
    public func deadLettered(_ job: SendJob, code: DeadLetterCode, message: String, attempts: Int, now: Timestamp) -> [SendResult] {
        targets(of: job).map { index, target in
            SendResult(jobID: job.jobID, appID: job.appID, mnMessageID: MessageID.resolve(job: job, recipientIndex: index),
                       campaign: job.campaign, target: target, outcome: .deadLettered,
                       error: ResultError(code: code.rawValue, message: String(message.prefix(1000))), attempts: attempts, completedAt: now)
        }
    }

    /// The plan after attempt number `attempt` (1-based) at `job`.
    ///
    /// - Parameters:
    ///   - composed: the composer's outcome for every target, in order.
    ///   - delivered: what sending gave, by recipient index, for the targets that were sent.
    ///   - firstFailedAt: when the job first failed transiently (nil if never before).
    ///   - possiblyDelivered: an earlier attempt timed out after its request was sent whole.
    public func plan(job: SendJob, attempt: Int, composed: [CompositionOutcome], delivered: [Int: DeliveryOutcome],
                     firstFailedAt: Timestamp?, possiblyDelivered: Bool = false, now: Timestamp,
                     random: inout some RandomNumberGenerator) -> JobPlan {
        var plan = JobPlan()
        var retry: [Int] = []
        var retryAfter: Duration?
        var retryCodes: [String] = []
        var firstRetryError: ResultError?
        var exhaustedPossiblyDelivered = false
        var quota = false
        var reachedFCM = false
        var dead: [DeadLetterCode: (indices: [Int], message: String)] = [:]
        let allTargets = Dictionary(uniqueKeysWithValues: targets(of: job).map { ($0.index, $0.target) })

        func result(_ index: Int, _ id: String, _ outcome: SendOutcome, name: String? = nil, error: ResultError? = nil) {
            var result = SendResult(jobID: job.jobID, appID: job.appID, mnMessageID: id, campaign: job.campaign,
                                    target: allTargets[index]!, outcome: outcome, fcmMessageName: name, error: error,
                                    attempts: attempt, completedAt: now)
            // Sent now after an earlier attempt FCM may have taken: the device may have it twice.
            result.possiblyDuplicate = possiblyDelivered && outcome == .sent
            plan.results.append(result)
        }
        func deadLetter(_ code: DeadLetterCode, _ index: Int, _ error: ResultError) {
            dead[code, default: ([], "")].indices.append(index)
            if dead[code]!.message.isEmpty { dead[code]!.message = "\(error.code): \(error.message)" }
        }

        for outcome in composed {
            switch outcome {
            case .invalid(let index, let id, let issues):
                result(index, id, .rejected, error: ResultError(code: issues.first.map { $0.code.rawValue } ?? "INVALID",
                                                                message: issues.map(\.description).joined(separator: "; ")))
            case .message(let message):
                let index = message.recipientIndex
                switch delivered[index] {
                case .sent(let name)?: result(index, message.mnMessageID, job.validateOnly ? .validated : .sent, name: name.isEmpty ? nil : name)
                case .invalidToken(let e)?: result(index, message.mnMessageID, .invalidToken, error: e)
                case .rejected(let e)?: result(index, message.mnMessageID, .rejected, error: e)
                case .retryable(let e, let after, let overQuota)?:
                    retry.append(index)
                    retryCodes.append(e.code)
                    if firstRetryError == nil { firstRetryError = e }
                    reachedFCM = true
                    if overQuota { quota = true }
                    if let after { retryAfter = max(retryAfter ?? .zero, after) }
                case .deferred(let e, let after)?:
                    retry.append(index)
                    retryCodes.append(e.code)
                    if firstRetryError == nil { firstRetryError = e }
                    if let after { retryAfter = max(retryAfter ?? .zero, after) }
                case .authFailed(let e)?: deadLetter(.authFailed, index, e)
                case .configurationFailed(let e, let fault)?: deadLetter(fault.deadLetterCode, index, e)
                case nil:
                    // Not sent in this attempt (e.g. shutdown): try again soon; this one does
                    // count, so a job that can never be sent still runs out of attempts.
                    retry.append(index)
                    retryCodes.append("NOT_SENT")
                    reachedFCM = true
                }
            }
        }

        if !retry.isEmpty {
            // An attempt counts only if one of the recipients still to send reached FCM: a copy
            // held back by a paused project keeps its attempt number (its age still runs).
            let attempts = reachedFCM ? attempt : attempt - 1
            let first = firstFailedAt ?? now
            let timedOutWhole = possiblyDelivered || retryCodes.contains(Self.timeoutAfterSendCode)
            if policy.isExhausted(attempts: attempts, firstFailedAt: first, now: now) {
                let codes = Array(Set(retryCodes)).sorted().joined(separator: ", ")
                let note = timedOutWhole ? " (possibly delivered: a request sent whole got no answer in time)" : ""
                dead[.retriesExhausted] = (retry, "gave up after \(attempts) attempt(s); last errors: \(codes)\(note)")
                exhaustedPossiblyDelivered = timedOutWhole
            } else {
                let delay = policy.delay(afterAttempt: max(attempts, 1), retryAfter: retryAfter, isQuota: quota, using: &random)
                var reason = Array(Set(retryCodes)).sorted().joined(separator: ", ")
                if let first = firstRetryError {
                    reason += "; " + first.code + (first.httpStatus.map { " (HTTP \($0))" } ?? "") + ": " + first.message
                }
                plan.retry = RetryPlan(job: job.keepingRecipients(at: retry), delay: delay, attempts: attempts,
                                       possiblyDelivered: timedOutWhole, reason: String(reason.prefix(500)))
            }
        }
        for code in DeadLetterCode.allCases {
            guard let entry = dead[code] else { continue }
            let part = job.keepingRecipients(at: entry.indices)
            let possiblyDelivered = code == .retriesExhausted && exhaustedPossiblyDelivered
            plan.deadLetters.append(DeadLetterPlan(job: part, code: code, message: entry.message, possiblyDelivered: possiblyDelivered))
            var results = deadLettered(part, code: code, message: entry.message, attempts: attempt, now: now)
            if possiblyDelivered {
                for i in results.indices { results[i].possiblyDelivered = true }
            }
            plan.results += results
        }
        return plan
    }

    private func targets(of job: SendJob) -> [(index: Int, target: (kind: String, value: String))] {
        (0..<job.target.count).map { index in
            let member = job.target.member(index)
            return (index, (member.key, member.value))
        }
    }
}
