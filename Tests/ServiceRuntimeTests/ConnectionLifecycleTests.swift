@testable import ServiceRuntime
import Synchronization
import Testing

/// The reconnect / shutdown / drain policy shared by the worker's lanes and the events consumer,
/// with in-memory sessions (pure control flow: no broker).
@Suite(.timeLimit(.minutes(1))) struct ConnectionLifecycleTests {
    struct Refused: Error {}

    @Test func theBackoffGrowsOverFailuresInARowAndStartsOverAfterASession() async {
        let shutdown = ShutdownSignal()
        let lifecycle = ConnectionLifecycle(backoff: Backoff(initial: .milliseconds(1), max: .milliseconds(4)), shutdown: shutdown)
        // Four failures, a session that ends normally, one failure, then a failure once shut down.
        let fails = [true, true, true, true, false, true, true]
        var sessions = 0
        var waits: [Duration] = []
        await lifecycle.run({
            defer { sessions += 1 }
            if sessions == fails.count - 1 { shutdown.trigger() }
            if fails[sessions] { throw Refused() }
        }, onFailure: { _, wait in waits.append(wait) })
        #expect(sessions == 7)
        #expect(waits == [.milliseconds(1), .milliseconds(2), .milliseconds(4), .milliseconds(4), .milliseconds(1)],
                "the failure after shutdown is not reported")
    }

    @Test func shutdownEndsTheWaitBeforeTheNextSession() async {
        let shutdown = ShutdownSignal()
        let lifecycle = ConnectionLifecycle(backoff: Backoff(initial: .seconds(3600), max: .seconds(3600)), shutdown: shutdown)
        let sessions = Atomic<Int>(0)
        let (failed, failure) = AsyncStream.makeStream(of: Void.self)
        async let run: Void = lifecycle.run({
            sessions.add(1, ordering: .relaxed)
            throw Refused()
        }, onFailure: { _, _ in failure.yield() })
        for await _ in failed { break }
        shutdown.trigger()
        await run  // would wait an hour (and hit the time limit) if the backoff ignored shutdown
        #expect(sessions.load(ordering: .relaxed) == 1)
    }

    @Test func shutdownStopsTheRunningSessionOnce() async {
        let shutdown = ShutdownSignal()
        let lifecycle = ConnectionLifecycle(backoff: Backoff(initial: .seconds(1), max: .seconds(1)), shutdown: shutdown)
        let stops = Atomic<Int>(0)
        let (stopped, stop) = AsyncStream.makeStream(of: Void.self)
        let watcher = lifecycle.watchShutdown {
            stops.add(1, ordering: .relaxed)
            stop.finish()
        }
        shutdown.trigger()
        for await _ in stopped {}  // ends once `stop` ran
        await watcher.value
        #expect(stops.load(ordering: .relaxed) == 1)
    }

    @Test func aSessionThatEndedIsNotStoppedByALaterShutdown() async {
        let shutdown = ShutdownSignal()
        let lifecycle = ConnectionLifecycle(backoff: Backoff(initial: .seconds(1), max: .seconds(1)), shutdown: shutdown)
        let stops = Atomic<Int>(0)
        let watcher = lifecycle.watchShutdown { stops.add(1, ordering: .relaxed) }
        watcher.cancel()
        await watcher.value
        shutdown.trigger()
        #expect(stops.load(ordering: .relaxed) == 0)
    }

    @Test func drainingSucceedsOnceDrainedAndGivesUpAtTheDeadline() async {
        #expect(await ConnectionLifecycle.drain(within: .seconds(3600)) {})
        let givenUp = Atomic<Int>(0)
        let (never, release) = AsyncStream.makeStream(of: Void.self)
        let drained = await ConnectionLifecycle.drain(within: .milliseconds(20), giveUp: {
            givenUp.add(1, ordering: .relaxed)
            release.finish()
        }) {
            for await _ in never {}  // released by giveUp only
        }
        #expect(!drained)
        #expect(givenUp.load(ordering: .relaxed) == 1)
    }
}
