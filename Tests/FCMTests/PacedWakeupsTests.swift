import Testing
@testable import FCM

/// The one-thread pacer of sends waiting for their project's quota: nobody wakes before their
/// deadline, everybody wakes, and a cancelled waiter wakes at once.
@Suite(.timeLimit(.minutes(1))) struct PacedWakeupsTests {
    @Test func fiveHundredWaitersInAnyOrderEachWakeNoEarlierThanTheirDeadline() async {
        let pacer = PacedWakeups()
        let early = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<500 {
                // Deadlines out of order, some equal, some zero.
                let delay = Duration.milliseconds((index * 37) % 300)
                group.addTask {
                    let start = ContinuousClock.now
                    await pacer.sleep(for: delay)
                    return ContinuousClock.now - start < delay
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(early == 0)
    }

    @Test func aCancelledWaiterWakesAtOnceAndTheOthersStillWake() async {
        let pacer = PacedWakeups()
        let start = ContinuousClock.now
        let long = Task { await pacer.sleep(for: .seconds(60)) }
        let short = Task { await pacer.sleep(for: .milliseconds(20)) }
        try? await Task.sleep(for: .milliseconds(50))
        long.cancel()
        await long.value
        await short.value
        #expect(ContinuousClock.now - start < .seconds(30), "the cancelled 60 s wait did not end early")
    }

    /// Cancelled before, while and after queueing: every one returns (a lost wake-up would hang
    /// the test until its time limit).
    @Test func waitersCancelledAtAnyMomentAllReturn() async {
        let pacer = PacedWakeups()
        for round in 0..<200 {
            let task = Task { await pacer.sleep(for: .seconds(60)) }
            if round % 3 == 1 { await Task.yield() }
            if round % 3 == 2 { try? await Task.sleep(for: .milliseconds(1)) }
            task.cancel()
            await task.value
        }
    }
}
