import Testing
@testable import PushWorker

/// A job's life on its lane as a plain value (`LaneJobState`): the order of its steps, and that
/// every way through ends once, acked only when confirmed (pure logic: no broker, no FCM; the
/// worker's integration suites drive the same value through a real broker and emulator).
@Suite struct LaneJobStateTests {
    typealias Event = LaneJobState.Event
    typealias Action = LaneJobState.Action

    /// The actions `events` lead to, in order, and the phase they end in.
    static func walk(_ events: [Event]) -> (actions: [Action], phase: LaneJobState.Phase) {
        var state = LaneJobState()
        let actions = events.map { state.advance($0) }
        return (actions, state.phase)
    }

    @Test func aJobAdmittedWhileTheBrokerIsFreeIsSentPublishedAndAckedInThatOrder() {
        let (actions, phase) = Self.walk([.admitted(brokerBlocked: false), .planned(laneGaveUp: false), .published(confirmed: true)])
        #expect(actions == [.send, .publish, .ack])
        #expect(phase == .acked)
    }

    @Test func aJobAdmittedDuringABrokerAlarmWaitsItOutBeforeSendingAnything() {
        var state = LaneJobState()
        let first = state.advance(.admitted(brokerBlocked: true))
        #expect(first == .waitOutAlarm && state.phase == .waitingOutAlarm, "nothing is sent while the broker blocks publishing")
        let (actions, phase) = Self.walk([.admitted(brokerBlocked: true), .alarmPassed, .planned(laneGaveUp: false),
                                          .published(confirmed: true)])
        #expect(actions == [.waitOutAlarm, .send, .publish, .ack])
        #expect(phase == .acked)
    }

    @Test func aJobWhoseLaneGaveUpWhileItWasSendingIsNeitherPublishedNorAcked() {
        let (actions, phase) = Self.walk([.admitted(brokerBlocked: false), .planned(laneGaveUp: true)])
        #expect(actions == [.send, .abandon], "its delivery comes back from the broker: publishing its results would duplicate them")
        #expect(phase == .abandoned)
    }

    @Test func aJobWhoseMessagesWereNeverConfirmedIsAbandonedNotAcked() {
        let (actions, phase) = Self.walk([.admitted(brokerBlocked: false), .planned(laneGaveUp: false), .published(confirmed: false)])
        #expect(actions == [.send, .publish, .abandon])
        #expect(phase == .abandoned)
    }

    /// Every way through (free or blocked broker; the lane giving up before publishing or before
    /// the confirm; confirmed): exactly one ending action, the last one, and `ack` only after a
    /// `publish` that was confirmed. The admission is given back at that ending, so once.
    @Test func everyWayThroughEndsExactlyOnceAndAcksOnlyWhatWasConfirmed() {
        var ways = 0
        for blocked in [false, true] {
            for gaveUp in [false, true] {
                for confirmed in [false, true] where !gaveUp || !confirmed {
                    var events: [Event] = [.admitted(brokerBlocked: blocked)]
                    if blocked { events.append(.alarmPassed) }
                    events.append(.planned(laneGaveUp: gaveUp))
                    if !gaveUp { events.append(.published(confirmed: confirmed)) }
                    var state = LaneJobState()
                    var ended: [Int] = []
                    var actions: [Action] = []
                    for (step, event) in events.enumerated() {
                        #expect(!state.hasEnded, "an event after the end: \(events)")
                        let action = state.advance(event)
                        actions.append(action)
                        if action == .ack || action == .abandon { ended.append(step) }
                    }
                    #expect(ended == [events.count - 1], "one ending, the last step: \(events) → \(actions)")
                    #expect(state.hasEnded)
                    let acked = actions.last == .ack
                    #expect(acked == (!gaveUp && confirmed), "acked exactly when published and confirmed: \(events)")
                    #expect(!acked || actions.contains(.publish))
                    ways += 1
                }
            }
        }
        #expect(ways == 6)
    }

    /// An event its phase cannot take is a programming error, never a job's fault: the process
    /// stops rather than ack, publish or send on a wrong state. Each case runs in a child process.
    @Test func anEventItsPhaseCannotTakeStopsTheProcess() async {
        await #expect(processExitsWith: .failure, "an answer before the send") {
            var state = LaneJobState()
            _ = state.advance(.planned(laneGaveUp: false))
        }
        await #expect(processExitsWith: .failure, "a confirm before the publish") {
            var state = LaneJobState()
            _ = state.advance(.admitted(brokerBlocked: false))
            _ = state.advance(.published(confirmed: true))
        }
        await #expect(processExitsWith: .failure, "an event after the end") {
            var state = LaneJobState()
            for event: LaneJobState.Event in [.admitted(brokerBlocked: false), .planned(laneGaveUp: false),
                                              .published(confirmed: true), .published(confirmed: true)] {
                _ = state.advance(event)
            }
        }
        await #expect(processExitsWith: .success, "a whole life, for contrast") {
            var state = LaneJobState()
            for event: LaneJobState.Event in [.admitted(brokerBlocked: true), .alarmPassed, .planned(laneGaveUp: false),
                                              .published(confirmed: false)] {
                _ = state.advance(event)
            }
        }
    }
}
