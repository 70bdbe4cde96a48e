@testable import ServiceRuntime
import Synchronization
import Testing

/// The one start/stop/drain of the worker and the events commands, with services that only
/// record what happened to them (no broker needed: the group's rules are pure ordering).
@Suite(.timeLimit(.minutes(1))) struct ServiceGroupTests {
    /// Records the order of events across services.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Waits for the signal, then takes `drain` to settle.
    struct Draining: Service {
        let name: String
        let drain: Duration
        let journal: Journal
        func run(until shutdown: ShutdownSignal) async {
            journal.note("\(name) started")
            await shutdown.wait()
            try? await Task.sleep(for: drain)
            journal.note("\(name) drained")
        }
    }

    /// Gives up without waiting for the signal.
    struct GivingUp: Service {
        let journal: Journal
        func run(until shutdown: ShutdownSignal) async { journal.note("quitter ended") }
    }

    @Test func everyServiceDrainsBeforeTheStepsThatMustOutliveTheDrain() async throws {
        let journal = Journal()
        let shutdown = ShutdownSignal()
        let group = ServiceGroup([("slow", Draining(name: "slow", drain: .milliseconds(200), journal: journal)),
                                  ("fast", Draining(name: "fast", drain: .zero, journal: journal))],
                                 afterDrain: [{ journal.note("http stopped") }, { journal.note("publisher closed") }])
        async let ending = group.run(until: shutdown)
        while journal.all.filter({ $0.hasSuffix("started") }).count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!journal.all.contains { $0.hasSuffix("drained") }, "nothing drains before the signal")
        shutdown.trigger()
        #expect(await ending == .shutDown)
        #expect(Array(journal.all.suffix(4)) == ["fast drained", "slow drained", "http stopped", "publisher closed"])
    }

    @Test func aServiceThatEndsOnItsOwnStopsTheOthersAndIsReported() async {
        let journal = Journal()
        let shutdown = ShutdownSignal()
        let ending = await ServiceGroup([("lane", Draining(name: "lane", drain: .zero, journal: journal)), ("quitter", GivingUp(journal: journal))],
                                        afterDrain: [{ journal.note("http stopped") }]).run(until: shutdown)
        #expect(ending == .endedEarly("quitter"))
        #expect(shutdown.isTriggered, "the others were told to stop")
        #expect(journal.all.last == "http stopped")
        #expect(journal.all.contains("lane drained"))
    }

    @Test func aServiceEndingAfterTheSignalIsAnOrdinaryShutdown() async {
        let shutdown = ShutdownSignal()
        shutdown.trigger()
        let ending = await ServiceGroup([("quitter", GivingUp(journal: Journal()))]).run(until: shutdown)
        #expect(ending == .shutDown)
    }
}
