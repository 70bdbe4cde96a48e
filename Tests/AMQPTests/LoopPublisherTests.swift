import AMQP
import BrokerHarness
import Foundation
import Glibc
import OSThread
import Synchronization
import Testing
@testable import AMQP

/// The confirming publisher that lives on a `PollLoop`'s thread (decision 0086), against a real
/// broker: written and confirmed on that thread with no hand-off, never blocking it (a write the
/// socket does not take whole goes on at the next turn), and what happens when the broker
/// refuses a publish, drops the connection, refuses to connect, or the thread ends first.
@Suite(.serialized, .timeLimit(.minutes(2))) struct LoopPublisherTests {
    typealias Outgoing = ConfirmingPublisher.Outgoing

    @Test(arguments: [false, true])
    func publishesAreWrittenAndConfirmedOnTheLoopThreadWithoutAHandoff(overTLS: Bool) async throws {
        let broker = try await TestBroker.shared()
        let settings = try overTLS ? broker.tlsSettings() : broker.settings()
        let queue = broker.uniqueName("loop-publisher")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let outcomes = Outcomes()
        let (opened, settled, handoffs) = await onLoopThread { loop -> (Bool, Bool, Int) in
            guard let publisher = openPublisher(on: loop, settings) else { return (false, false, 0) }
            let before = ThreadHandoffs.count
            let thread = pthread_self()
            for b in 0..<50 {
                let batch = (0..<10).map { Outgoing(exchange: "", routingKey: queue, body: Data("\(b)-\($0)".utf8)) }
                let taken = publisher.publish(batch: batch) { outcomes.add($0, onThread: pthread_equal(pthread_self(), thread) != 0) }
                precondition(taken)
            }
            let settled = loop.turn(until: { outcomes.count == 500 })
            let handoffs = ThreadHandoffs.count - before
            loop.end(within: 0)
            return (true, settled, handoffs)
        }
        #expect(opened && settled)
        #expect(outcomes.errors.isEmpty, "\(outcomes.errors.prefix(3))")
        #expect(outcomes.allOnLoopThread, "every batch is called back on the loop's thread")
        #expect(handoffs == 0, "\(handoffs) hand-offs")
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == 500)
    }

    /// A batch's callback may publish again on the same publisher: the worker's lane does when a
    /// job's confirm acks it and frees room for the next job, whose messages may come at once (its
    /// campaign cancelled, its project paused). Called back from inside the publisher's confirm
    /// bookkeeping, that publish overlapped it and Swift's exclusivity check stopped the process.
    @Test func aBatchCallbackThatPublishesAgainOnTheSamePublisherIsConfirmed() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("loop-publisher-chain")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let outcomes = Outcomes()
        let links = 20
        let settled = await onLoopThread { loop -> Bool in
            guard let publisher = openPublisher(on: loop, settings) else { return false }
            defer { loop.end(within: 0) }
            publishChain(link: 0, of: links, to: queue, on: LoopThreadOnly(publisher), outcomes)
            return loop.turn(until: { outcomes.count == links * 5 })
        }
        #expect(settled, "\(outcomes.count) of \(links * 5) settled")
        #expect(outcomes.errors.isEmpty, "\(outcomes.errors.prefix(3))")
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == UInt32(links * 5))
    }

    /// (Over TCP: a TLS write is slower than the broker's reads and seldom fills the socket by
    /// itself; the stalled-relay tests below make it partial over TLS.)
    @Test func aBatchLargerThanTheSocketTakesIsWrittenOverSeveralTurnsAndConfirmed() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("loop-publisher-large")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let outcomes = Outcomes()
        let partialWrites = await onLoopThread { loop -> Int in
            guard let publisher = openPublisher(on: loop, settings) else { return -1 }
            // 16 MiB in one batch: far more than a socket's send buffer takes at once.
            let batch = (0..<64).map { Outgoing(exchange: "", routingKey: queue, body: Data(repeating: UInt8($0), count: 256 << 10)) }
            _ = publisher.publish(batch: batch) { outcomes.add($0, onThread: true) }
            _ = loop.turn(until: { outcomes.count == 64 }, seconds: 60)
            defer { loop.end(within: 0) }
            return publisher.partialWrites
        }
        #expect(outcomes.count == 64 && outcomes.errors.isEmpty, "\(outcomes.count) settled, \(outcomes.errors.prefix(3))")
        #expect(partialWrites > 0, "the socket took the batch in one write: the test proves nothing")
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == 64)
        let first = try client.get(queue: queue)
        #expect(first?.body == Data(repeating: 0, count: 256 << 10), "frames arrive whole and in order")
    }

    /// Over TLS a write the socket did not take whole is taken up again by SSL_write from where
    /// it stopped, and the buffer it reads has grown (and moved) with the publishes made since:
    /// without SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER OpenSSL refuses that ("bad write retry").
    @Test(arguments: [false, true])
    func publishesMadeWhileAWriteIsPartialFollowItWholeAndInOrder(overTLS: Bool) async throws {
        let broker = try await TestBroker.shared()
        let direct = try overTLS ? broker.tlsSettings() : broker.settings()
        let queue = broker.uniqueName("loop-publisher-grow")
        defer { try? broker.delete(queues: [queue], settings: direct) }
        try declareTestQueue(queue, settings: direct)
        let (relay, settings) = try relayed(direct)
        let outcomes = Outcomes()
        let (partialBefore, dead) = await onLoopThread { loop -> (Bool, Bool) in
            guard let publisher = openPublisher(on: loop, settings) else { return (false, true) }
            relay.stall()  // the broker reads nothing more: the first write stays partial
            let large = (0..<16).map { Outgoing(exchange: "", routingKey: queue, body: Data(repeating: UInt8($0), count: 256 << 10)) }
            _ = publisher.publish(batch: large) { outcomes.add($0, onThread: true) }
            _ = loop.turn(until: { publisher.partialWrites > 0 }, seconds: 10)
            let partial = publisher.partialWrites > 0 && outcomes.count == 0
            // 2 000 more, one batch each, while the first write waits: the buffer grows many times.
            for i in 0..<2_000 {
                let small = [Outgoing(exchange: "", routingKey: queue, body: Data("small-\(i)".utf8))]
                _ = publisher.publish(batch: small) { outcomes.add($0, onThread: true) }
                if i % 100 == 0 { _ = loop.turn(until: { false }, seconds: 0.001) }
            }
            relay.resume()
            _ = loop.turn(until: { outcomes.count == 2_016 }, seconds: 60)
            defer { loop.end(within: 0) }
            return (partial, publisher.isDead)
        }
        #expect(partialBefore, "the first write was taken whole: the test proves nothing")
        #expect(!dead && outcomes.count == 2_016 && outcomes.errors.isEmpty,
                "\(outcomes.count) settled, \(outcomes.errors.prefix(3))")
        let client = try AMQPChannelClient(settings: direct)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == 2_016)
        for expected in 0..<16 { #expect(try client.get(queue: queue)?.body == Data(repeating: UInt8(expected), count: 256 << 10)) }
        #expect(try client.get(queue: queue)?.body == Data("small-0".utf8), "the small ones follow the large ones")
    }

    /// A write that stopped at its very first byte leaves, over TLS, a record held back in OpenSSL
    /// though none of the caller's bytes count as written: nothing else may be written into that
    /// session until the write finishes, so the publisher does not read then (librabbitmq writes
    /// its heartbeat, due every `heartbeatSeconds` since its own last write, from a read). Behind
    /// a stalled broker for longer than a heartbeat interval its loop waits for the socket
    /// (before, a skipped read left its deadline in the past and the loop spun: 2 399 and 17 205
    /// write attempts in 2.5 s, 9 now), and once the broker reads again every publish is
    /// confirmed, none twice.
    @Test func aTLSWriteStuckAtItsFirstByteWaitsPastAHeartbeatWithoutSpinningAndLosesNothing() async throws {
        let broker = try await TestBroker.shared()
        let direct = try broker.tlsSettings(heartbeatSeconds: 2)
        let queue = broker.uniqueName("loop-publisher-heartbeat")
        defer { try? broker.delete(queues: [queue], settings: direct) }
        try declareTestQueue(queue, settings: direct)
        let (relay, settings) = try relayed(direct)
        let outcomes = Outcomes()
        let (stuck, writeAttempts, published, settleSeconds, dead) = await onLoopThread { loop -> (Bool, Int, Int, Double, Bool) in
            guard let publisher = openPublisher(on: loop, settings) else { return (false, 0, 0, 0, true) }
            relay.stall()
            // One publish (one TLS record) per turn, until a write takes nothing at all.
            var published = 0, own: [pollfd] = []
            while publisher.partialWrites == 0, published < 20_000, !publisher.isDead {
                let one = [Outgoing(exchange: "", routingKey: queue, body: Data(repeating: 1, count: 12 << 10))]
                _ = publisher.publish(batch: one) { outcomes.add($0, onThread: true) }
                published += 1
                loop.turn(&own, timeoutMillis: 0)
            }
            let stuck = publisher.partialWrites > 0 && !publisher.isDead
            // 2.5 s, past librabbitmq's next heartbeat: each pass tries the write again.
            let before = publisher.partialWrites
            _ = loop.turn(until: { publisher.isDead }, seconds: 2.5)
            let writeAttempts = publisher.partialWrites - before
            relay.resume()
            let start = PollLoop.now()
            _ = loop.turn(until: { outcomes.count == published }, seconds: 30)
            let settleSeconds = Double(PollLoop.now() - start) / 1e9
            defer { loop.end(within: 0) }
            return (stuck, writeAttempts, published, settleSeconds, publisher.isDead)
        }
        print("aTLSWriteStuck…: \(published) publishes until stuck, \(writeAttempts) write attempts in 2.5 s, settled in \(settleSeconds) s")
        #expect(stuck, "no write stopped short after \(published) publishes: the test proves nothing")
        #expect(writeAttempts <= 500, "the loop spun (\(writeAttempts) write attempts in 2.5 s) instead of waiting for the socket")
        #expect(!dead && outcomes.count == published && outcomes.errors.isEmpty,
                "\(outcomes.count) of \(published) settled, \(outcomes.errors.prefix(3))")
        #expect(settleSeconds < 3, "settled \(settleSeconds) s after the broker read again")
        let client = try AMQPChannelClient(settings: direct)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == published)
    }

    @Test(arguments: [false, true])
    func aConnectionResetWhileAWriteIsPartialFailsTheBatchAtOnce(overTLS: Bool) async throws {
        let broker = try await TestBroker.shared()
        let direct = try overTLS ? broker.tlsSettings() : broker.settings()
        let queue = broker.uniqueName("loop-publisher-reset")
        defer { try? broker.delete(queues: [queue], settings: direct) }
        try declareTestQueue(queue, settings: direct)
        let (relay, settings) = try relayed(direct)
        let outcomes = Outcomes()
        let (partial, dead, seconds) = await onLoopThread { loop -> (Bool, Bool, Double) in
            guard let publisher = openPublisher(on: loop, settings) else { return (false, false, 0) }
            relay.stall()  // the broker reads nothing more: the batch's write stays partial
            let batch = (0..<64).map { _ in Outgoing(exchange: "", routingKey: queue, body: Data(repeating: 7, count: 256 << 10)) }
            _ = publisher.publish(batch: batch) { outcomes.add($0, onThread: true) }
            _ = loop.turn(until: { false }, seconds: 0.5)
            let partial = publisher.partialWrites > 0 && outcomes.count == 0
            relay.reset()
            let start = PollLoop.now()
            _ = loop.turn(until: { outcomes.count == 64 }, seconds: 30)
            defer { loop.end(within: 0) }
            return (partial, publisher.isDead, Double(PollLoop.now() - start) / 1e9)
        }
        #expect(partial, "the write was not left partial: the test proves nothing")
        #expect(outcomes.count == 64 && dead, "\(outcomes.count) settled")
        // Nothing of the batch reached the broker: every message fails with the loss (the caller
        // publishes them again), at once, not at the confirm timeout.
        #expect(outcomes.errors.count == 64 && outcomes.errors.allSatisfy { $0.code == .connectionLost },
                "\(Set(outcomes.errors.map(\.code)))")
        #expect(seconds < 5, "failed after \(seconds) s")
    }

    @Test func aChannelErrorFailsItsPublishesAndRetiresThePublisherItsSuccessorPublishes() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("loop-publisher-404")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let lost = Outcomes(), kept = Outcomes()
        let (dead, successorTook) = await onLoopThread { loop -> (Bool, Bool) in
            let key = ObjectIdentifier(loop)
            guard let publisher = openPublisher(on: loop, settings) else { return (false, false) }
            _ = publisher.publish(batch: [Outgoing(exchange: "no-such-exchange", routingKey: "x", body: Data("lost".utf8))]) {
                lost.add($0, onThread: true)
            }
            _ = loop.turn(until: { lost.count == 1 })
            let dead = publisher.isDead && !publisher.publish(batch: [Outgoing(exchange: "", routingKey: queue, body: Data())]) { _ in }
            loop.detach(key)
            guard let next = openPublisher(on: loop, make: publisher.successor) else { return (dead, false) }
            _ = next.publish(batch: [Outgoing(exchange: "", routingKey: queue, body: Data("kept".utf8))]) { kept.add($0, onThread: true) }
            _ = loop.turn(until: { kept.count == 1 })
            loop.end(within: 0)
            return (dead, true)
        }
        #expect(lost.errors.first?.code == .channelClosed && lost.errors.first?.replyCode == 404, "\(lost.errors)")
        #expect(dead, "a publisher whose channel closed takes nothing more")
        #expect(successorTook && kept.count == 1 && kept.errors.isEmpty)
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        #expect(try client.messageCount(queue: queue) == 1)
    }

    @Test func aConnectionTheBrokerClosesKillsThePublisherAndItsSuccessorPublishes() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.makeVhost()
        defer { try? broker.deleteVhost(settings.vhost) }
        try declareTestQueue("q", settings: settings)
        let kept = Outcomes()
        let (died, successorTook) = await onLoopThread { loop -> (Bool, Bool) in
            let key = ObjectIdentifier(loop)
            guard let publisher = openPublisher(on: loop, settings) else { return (false, false) }
            try? broker.closeAllConnections(vhost: settings.vhost, reason: "test: loop publisher dropped")
            let died = loop.turn(until: { publisher.isDead })
            loop.detach(key)
            guard let next = openPublisher(on: loop, make: publisher.successor) else { return (died, false) }
            _ = next.publish(batch: [Outgoing(exchange: "", routingKey: "q", body: Data("kept".utf8))]) { kept.add($0, onThread: true) }
            _ = loop.turn(until: { kept.count == 1 })
            loop.end(within: 0)
            return (died, true)
        }
        #expect(died, "the loss is noticed by the loop's reads")
        #expect(successorTook && kept.count == 1 && kept.errors.isEmpty, "\(kept.errors)")
    }

    @Test func aPublisherThatCannotConnectIsDeadAndItsSuccessorWaitsABackoffFirst() async throws {
        let refusing = try RefusingPort()
        let settings = AMQPSettings(port: refusing.port)
        let (dead, successorWaited) = await onLoopThread { loop -> (Bool, Bool) in
            let key = ObjectIdentifier(loop)
            let publisher = loop.source(for: key) { LoopPublisher(settings: settings, options: .init()) }
            let dead = loop.turn(until: { publisher.isDead }) && !publisher.isTaking
            loop.detach(key)
            let next = loop.source(for: key, make: publisher.successor)
            // 0.5 s of backoff: within 0.3 s it has not even tried.
            let triedEarly = loop.turn(until: { next.isDead || next.isTaking }, seconds: 0.3)
            loop.end(within: 0)
            return (dead, !triedEarly)
        }
        #expect(dead)
        #expect(successorWaited)
        #expect(LoopPublisher.backoff(afterFailures: 0) == 0)
        #expect(LoopPublisher.backoff(afterFailures: 1) == 500_000_000)
        #expect(LoopPublisher.backoff(afterFailures: 3) == 2_000_000_000)
        #expect(LoopPublisher.backoff(afterFailures: 40) == 30_000_000_000)
    }

    @Test func aLoopThatEndsWaitsForTheConfirmsOfWhatItPublished() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("loop-publisher-end")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try declareTestQueue(queue, settings: settings)
        let outcomes = Outcomes()
        let opened = await onLoopThread { loop -> Bool in
            guard let publisher = openPublisher(on: loop, settings) else { return false }
            let batch = (0..<200).map { Outgoing(exchange: "", routingKey: queue, body: Data("\($0)".utf8)) }
            _ = publisher.publish(batch: batch) { outcomes.add($0, onThread: true) }
            loop.end(within: 10_000_000_000)  // at once: nothing was written yet
            return true
        }
        #expect(opened)
        #expect(outcomes.count == 200 && outcomes.errors.isEmpty, "\(outcomes.count) settled, \(outcomes.errors.prefix(3))")
    }
}

/// Publishes link `link` of a chain (five messages) on `publisher`; the link's callback publishes
/// the next one on the same publisher, from inside the publisher's own confirm handling.
private func publishChain(link: Int, of links: Int, to queue: String, on publisher: LoopThreadOnly<LoopPublisher>, _ outcomes: Outcomes) {
    let batch = (0..<5).map { ConfirmingPublisher.Outgoing(exchange: "", routingKey: queue, body: Data("\(link)-\($0)".utf8)) }
    let taken = publisher.value.publish(batch: batch) { settled in
        outcomes.add(settled, onThread: true)
        if link + 1 < links { publishChain(link: link + 1, of: links, to: queue, on: publisher, outcomes) }
    }
    #expect(taken, "link \(link) not taken")
}

/// A value used only on the loop's thread, carried through a callback the loop calls there.
private struct LoopThreadOnly<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A relay in front of the broker of `direct`, and the settings that reach the broker through it.
private func relayed(_ direct: AMQPSettings) throws -> (StallingRelay, AMQPSettings) {
    let relay = try StallingRelay(targetPort: direct.port)
    var settings = direct
    settings.port = relay.port
    return (relay, settings)
}

/// A loop publisher made by `make`, attached to `loop` (under the loop's own key), once it takes
/// publishes; nil when it died first or did not open within 10 s.
private func openPublisher(on loop: PollLoop, make: () -> LoopPublisher) -> LoopPublisher? {
    let publisher = loop.source(for: ObjectIdentifier(loop), make: make)
    return loop.turn(until: { publisher.isTaking || publisher.isDead }) && publisher.isTaking ? publisher : nil
}

/// `openPublisher(on:make:)` of a new publisher to the broker of `settings`.
private func openPublisher(on loop: PollLoop, _ settings: AMQPSettings) -> LoopPublisher? {
    openPublisher(on: loop) { LoopPublisher(settings: settings, options: .init()) }
}

/// What the batches of a test were settled with.
private final class Outcomes: Sendable {
    private let state = Mutex<(count: Int, errors: [AMQPError], offThread: Int)>((0, [], 0))

    func add(_ outcomes: [AMQPError?], onThread: Bool) {
        state.withLock { s in
            s.count += outcomes.count
            s.errors += outcomes.compactMap { $0 }
            if !onThread { s.offThread += 1 }
        }
    }

    var count: Int { state.withLock { $0.count } }
    var errors: [AMQPError] { state.withLock { $0.errors } }
    var allOnLoopThread: Bool { state.withLock { $0.offThread == 0 } }
}
