import Synchronization
import Testing
@testable import FCM

/// A curl loop wakes its thread only when a submit makes its inbox non-empty (`CurlLoop`). These
/// tests give the loop no other way out of `curl_multi_poll` (its idle wait is ten minutes), so a
/// lost wake-up leaves requests unanswered instead of costing a second.
@Suite(.timeLimit(.minutes(1))) struct CurlLoopWakeupTests {
    private final class Answered: Sendable { let count = Atomic<Int>(0) }

    /// Rounds alternate one request and a burst of many sent from concurrent tasks; each round
    /// starts once the previous one is answered, so it finds the loop asleep or about to sleep.
    @Test func everyRequestSubmittedToAnIdleLoopFromManyTasksIsAnswered() async throws {
        let harness = try EmulatorHarness(tls: true, configureClient: { $0.transport.loopIdleWait = .seconds(600) })
        defer { harness.stop() }  // wakes the loop and fails what is left, should a round hang
        let answered = Answered()
        var expected = 0
        for round in 0..<24 {
            let size = round.isMultiple(of: 2) ? 1 : 40
            expected += size
            for index in 0..<size {
                Task {
                    if case .sent = await harness.send(token: "loop-\(round)-\(index)") { answered.count.add(1, ordering: .relaxed) }
                }
            }
            let target = expected
            let done = await eventually(timeout: .seconds(20)) { answered.count.load(ordering: .relaxed) == target }
            #expect(done, "round \(round): \(answered.count.load(ordering: .relaxed)) of \(target) requests answered")
            if !done { break }
        }
    }
}
