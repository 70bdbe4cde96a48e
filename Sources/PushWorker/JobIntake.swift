import OSThread
import PushCore

/// A delivery read and checked (`JobProcessor.intake`): decoded, its App ID found, `not_after`
/// checked and its shared part prepared. Either it is settled already (bad input, an unknown App
/// ID, expired: messages to publish, nothing to send) or it is a job to send once admitted.
public struct JobIntake: Sendable {
    let history: DeliveryHistory
    let record: JobRecord
    let preparation: Preparation
    /// The catalog's sender when the job was read, with the App IDs it was checked against.
    let sender: any PushSender

    /// Permits of the job admission it asks for: one per target; none when it has nothing to send.
    var weight: Int {
        if case .ready(let job) = preparation { return job.prepared.targetCount }
        return 0
    }
}

/// A job let in by the job admission (`JobProcessor.admit`), holding `permits` of `admission`
/// until it is settled and given back (`JobProcessor.release`).
public struct AdmittedJob: Sendable {
    let intake: JobIntake
    let permits: Int
    /// The pool the permits came from (a lane's share of the process's admission).
    let admission: PermitPool?
}

/// What sending an admitted job gave (`JobProcessor.startSending`), for
/// `JobProcessor.conclude`: every target's composition outcome, in order, and the send outcomes
/// by recipient index; nil when the lane gave up before the first send.
public struct SentJob: Sendable {
    let sends: TargetSends?
}

/// Every target's composition outcome, in order (without the request body once sent), and
/// what sending gave by recipient index.
typealias TargetSends = (composed: [CompositionOutcome], delivered: [Int: DeliveryOutcome])

/// What `JobProcessor.intake` made of a delivery: messages already, or a job to send.
enum Preparation: Sendable {
    case settled([OutboundMessage])
    case ready(ReadyJob)
}

/// A decoded job ready to be sent: what its sends and its plan need, in one heap box, so that
/// the frames a job holds while its sends are in flight carry one reference, not its parts.
final class ReadyJob: Sendable {
    let job: SendJob
    let app: AppConfiguration
    let prepared: PreparedJob

    init(job: SendJob, app: AppConfiguration, prepared: PreparedJob) {
        self.job = job
        self.app = app
        self.prepared = prepared
    }
}
