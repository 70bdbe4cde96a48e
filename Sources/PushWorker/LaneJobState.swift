/// Where one delivery stands on its lane, from admitted to acked: a plain value the lane advances
/// with what happens to the job (`Event`), each step answering what the lane does next
/// (`Action`). No I/O, no callbacks: the rules of a job's life are here, in one place, and
/// unit-tested like `TargetWalkState` (which is the `sending` phase's own state).
///
///     admitted ─(broker free)──────────────────────────→ sending ─planned→ publishing ─confirmed→ acked
///         └─(broker blocked)→ waitingOutAlarm ─alarmPassed→ ┘       │                │
///                                                  (lane gave up)───┴──(unconfirmed)─┴→ abandoned
///
/// The rules it pins: a delivery is acked only once every message it caused is confirmed; a job
/// whose lane gave up (its consumer ended, or the shutdown deadline passed) is never published nor
/// acked, and its delivery comes back from the broker; every admitted job ends exactly once,
/// `acked` or `abandoned`, which is when its admission is given back. A job's events come one
/// after another (each is the answer to the step before), so the value needs no lock: it moves
/// with the job from step to step.
struct LaneJobState: Sendable, Equatable {
    /// Where the job stands.
    enum Phase: Sendable, Equatable {
        /// Let in by the job admission; nothing done yet.
        case admitted
        /// Admitted while the broker blocks publishing: new work waits the alarm out, since its
        /// messages could not be confirmed anyway.
        case waitingOutAlarm
        /// Its targets going out (`TargetWalk`).
        case sending
        /// Planned; its messages published and waiting for the broker's confirms.
        case publishing
        /// Every message confirmed and the delivery acked. The end.
        case acked
        /// The lane gave up on the delivery: it stays unacked and the broker brings it back. The end.
        case abandoned
    }

    /// What happened to the job.
    enum Event: Sendable, Equatable {
        /// The job admission let it in; `brokerBlocked`: the broker blocks publishing now.
        case admitted(brokerBlocked: Bool)
        /// The broker's alarm passed (or the lane gave up while it lasted: the send then sends nothing).
        case alarmPassed
        /// Every target composed and every send answered, the job planned; `laneGaveUp`: the
        /// lane gave up meanwhile (nothing of it may be published: its delivery comes back).
        case planned(laneGaveUp: Bool)
        /// The publisher's verdict on the job's messages: all confirmed, or given up (the lane did).
        case published(confirmed: Bool)
    }

    /// What the lane does next with the job.
    enum Action: Sendable, Equatable {
        /// Wait until the broker unblocks publishing, then `alarmPassed`.
        case waitOutAlarm
        /// Send its targets, then `planned`.
        case send
        /// Publish its messages until confirmed, then `published`. From here on its sends
        /// happened: the delivery is never requeued for a publish failure.
        case publish
        /// Ack the delivery, count its messages, give its admission back.
        case ack
        /// Leave the delivery unacked (the broker requeues it), give its admission back.
        case abandon
    }

    private(set) var phase: Phase = .admitted

    /// True once the job ended (`acked` or `abandoned`): its admission is given back.
    var hasEnded: Bool { phase == .acked || phase == .abandoned }

    /// Advances by `event` and says what to do next. An event the phase cannot take (an answer
    /// twice, a confirm before a publish) is a programming error, never a job's fault.
    mutating func advance(_ event: Event) -> Action {
        switch (phase, event) {
        case (.admitted, .admitted(brokerBlocked: false)), (.waitingOutAlarm, .alarmPassed):
            phase = .sending
            return .send
        case (.admitted, .admitted(brokerBlocked: true)):
            phase = .waitingOutAlarm
            return .waitOutAlarm
        case (.sending, .planned(laneGaveUp: false)):
            phase = .publishing
            return .publish
        case (.sending, .planned(laneGaveUp: true)), (.publishing, .published(confirmed: false)):
            phase = .abandoned
            return .abandon
        case (.publishing, .published(confirmed: true)):
            phase = .acked
            return .ack
        default:
            preconditionFailure("a job in phase \(phase) cannot take \(event)")
        }
    }
}
