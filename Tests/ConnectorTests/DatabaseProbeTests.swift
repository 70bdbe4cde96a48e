import Foundation
@testable import PushEvents
import Synchronization
import Testing
@testable import Connector

/// `/healthz` of the events service probes the database at most once per `maxAge`, and never
/// twice at once: callers arriving while a probe waits on a slow server get the previous answer.
@Suite struct DatabaseProbeTests {
    @Test func answersFromTheCacheWithinMaxAge() {
        let calls = Atomic<Int>(0)
        let probe = DatabaseProbe(maxAge: .seconds(60)) {
            calls.add(1, ordering: .relaxed)
            return "down"
        }
        #expect(probe.problem() == "down")
        #expect(probe.problem() == "down")
        #expect(calls.load(ordering: .relaxed) == 1)
    }

    @Test func callersDuringASlowProbeGetThePreviousAnswerWithoutProbing() async throws {
        let calls = Atomic<Int>(0)
        let release = DispatchSemaphore(value: 0)
        let probe = DatabaseProbe(maxAge: .milliseconds(1)) {
            let call = calls.add(1, ordering: .relaxed).newValue
            if call == 2 { release.wait() }  // the second probe hangs until released
            return call == 1 ? nil : "database: timeout"
        }
        #expect(probe.problem() == nil)
        try await Task.sleep(for: .milliseconds(5))
        let slow = Thread { _ = probe.problem() }
        slow.start()
        while calls.load(ordering: .relaxed) < 2 { try await Task.sleep(for: .milliseconds(1)) }
        // The second probe is running: five more callers answer at once, from the cache.
        for _ in 0..<5 { #expect(probe.problem() == nil) }
        #expect(calls.load(ordering: .relaxed) == 2)
        release.signal()
        // Once the slow probe ends, its answer replaces the old one.
        while probe.problem() == nil { try await Task.sleep(for: .milliseconds(1)) }
    }
}
