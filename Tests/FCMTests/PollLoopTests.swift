import BrokerHarness
import Glibc
import OSThread
import Synchronization
import Testing

/// The poll set a thread that owns sockets shares with the sources other code attaches
/// (issue 30, decision 0085): one poll(2) for the owner's descriptors and every source's, each
/// handling its own events; a source's deadline shortens the wait; the end waits for busy
/// sources, then ends them and forgets the thread's loop.
@Suite struct PollLoopTests {
    @Test func aSourceIsPolledTogetherWithTheOwnersDescriptorsAndHandlesOnlyItsOwnEvents() async throws {
        let report = await onLoopThread { loop -> [String] in
            var lines: [String] = []
            guard let wakeup = try? LoopWakeup() else { return ["no wake-up"] }
            let source = loop.source(for: ObjectIdentifier(wakeup)) { TestSource(fd: wakeup.fd) }
            var pipeEnds: [Int32] = [0, 0]
            _ = pipe(&pipeEnds)
            defer { close(pipeEnds[0]); close(pipeEnds[1]) }
            var own = [pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)]
            wakeup.signal()
            loop.turn(&own, timeoutMillis: 10_000)
            lines.append("source event: handled \(source.handled), own \(own[0].revents)")
            wakeup.consume()
            var byte: UInt8 = 1
            _ = write(pipeEnds[1], &byte, 1)
            loop.turn(&own, timeoutMillis: 10_000)
            lines.append("own event: handled \(source.handled), own readable \(own[0].revents & Int16(POLLIN) != 0)")
            lines.append("same source again: \(loop.source(for: ObjectIdentifier(wakeup)) { TestSource(fd: -1) } === source)")
            loop.detach(ObjectIdentifier(wakeup))
            lines.append("after detach, a new one: \(loop.source(for: ObjectIdentifier(wakeup)) { TestSource(fd: -1) } !== source)")
            lines.append("current is this loop: \(PollLoop.current === loop)")
            loop.end(within: 0)
            lines.append("current after end: \(PollLoop.current == nil)")
            return lines
        }
        #expect(report == ["source event: handled 1, own 0",
                           "own event: handled 1, own readable true",
                           "same source again: true",
                           "after detach, a new one: true",
                           "current is this loop: true",
                           "current after end: true"])
        #expect(PollLoop.current == nil, "a task's thread has no loop")
    }

    @Test func aSourceThatWantsAPassSoonerShortensTheWait() async {
        let waited = await onLoopThread { loop -> UInt64 in
            let source = loop.source(for: ObjectIdentifier(loop)) { TestSource(fd: -1) }
            source.wantsPassIn = 20_000_000
            var nothing: [pollfd] = []
            let start = PollLoop.now()
            loop.turn(&nothing, timeoutMillis: 30_000)
            let waited = PollLoop.now() - start
            loop.end(within: 0)
            return waited
        }
        #expect(waited < 10_000_000_000, "woke for the source's pass, not after the owner's 30 s: \(waited) ns")
    }

    @Test func theEndTurnsWhileASourceIsBusyThenEndsIt() async {
        let (passes, ended) = await onLoopThread { loop -> (Int, Bool) in
            let source = loop.source(for: ObjectIdentifier(loop)) { TestSource(fd: -1) }
            source.busyPasses = 3
            source.wantsPassIn = 1_000_000
            loop.end(within: 30_000_000_000)
            return (source.passes, source.ended)
        }
        #expect(passes >= 3 && ended, "\(passes) passes, ended \(ended)")
    }
}

/// A source with one descriptor that counts what the loop asks of it.
private final class TestSource: PollSource {
    let fd: Int32
    var handled = 0
    var passes = 0
    var busyPasses = 0
    var wantsPassIn: UInt64?
    var ended = false

    init(fd: Int32) { self.fd = fd }

    func pass(now: UInt64) -> UInt64? {
        passes += 1
        if busyPasses > 0 { busyPasses -= 1 }
        return wantsPassIn.map { now + $0 }
    }

    func interests(into fds: inout [pollfd]) { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }

    func handle(_ polled: ArraySlice<pollfd>) { if polled.contains(where: { $0.revents != 0 }) { handled += 1 } }

    var isBusy: Bool { busyPasses > 0 }

    func end() { ended = true }
}
