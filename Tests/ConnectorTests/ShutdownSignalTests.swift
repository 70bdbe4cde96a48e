import BrokerHarness
@testable import PushWorker
@testable import ServiceRuntime
import Testing
@testable import Connector

/// The shutdown flag tasks wait on.
@Suite(.timeLimit(.minutes(1))) struct ShutdownSignalTests {
    @Test func triggerResumesEveryWaiterAndLaterWaitsReturnAtOnce() async {
        let signal = ShutdownSignal()
        async let a: Void = signal.wait()
        async let b: Void = signal.wait()
        signal.trigger()
        _ = await (a, b)
        await signal.wait()
        #expect(signal.isTriggered)
    }

    @Test func aBackoffSleepEndsWhenTheSignalIsTriggered() async {
        let signal = ShutdownSignal()
        let sleeper = Task { await signal.sleep(for: .seconds(3600)) }
        signal.trigger()
        await sleeper.value  // would hang for an hour (and hit the time limit) if it ignored the signal
        #expect(signal.isTriggered)
    }

    @Test func aCancelledWaitReturnsWithoutTheSignal() async {
        let signal = ShutdownSignal()
        let waiter = Task { await signal.wait() }
        waiter.cancel()
        await waiter.value
        #expect(!signal.isTriggered)
    }
}

/// A lane that cannot reach its broker keeps retrying, and still stops on shutdown.
@Suite(.timeLimit(.minutes(1))) struct WorkerReconnectTests {
    @Test func unreachableBrokerIsRetriedWithBackoffUntilShutdown() async throws {
        let f = try await PipelineFixture()
        var settings = f.settings
        let refusing = try RefusingPort()  // nothing listens there, and nothing can start to
        defer { refusing.close() }
        settings.port = refusing.port
        var configuration = SendWorker.Configuration(settings: settings, topology: f.topology)
        configuration.reconnectBackoff = Backoff(initial: .milliseconds(20), max: .milliseconds(50))
        let worker = SendWorker(configuration: configuration,
                                processor: JobProcessor(registry: f.registry, sender: try f.makeWorker().processor.catalog.current.sender,
                                                        topology: f.topology),
                                logger: Logger(component: "test", minimumLevel: .error))
        let shutdown = ShutdownSignal()
        let task = Task { await worker.run(until: shutdown) }
        // Wait for the condition, not for a time: other tests may keep the machine busy.
        let deadline = ContinuousClock.now + .seconds(30)
        while worker.counters.connectAttempts.load(ordering: .relaxed) < 5, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        shutdown.trigger()
        await task.value
        #expect(worker.counters.connectAttempts.load(ordering: .relaxed) >= 5)
    }
}
