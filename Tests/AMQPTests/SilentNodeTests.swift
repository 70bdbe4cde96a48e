import AMQP
import BrokerHarness
import Foundation
import Glibc
import Testing
@testable import AMQP

/// A node that goes silent mid-write (no reset, no close: its sockets fill, then meet a zero
/// window) in front of a publisher with two node URLs: the write that waits for the socket is
/// given up within two heartbeats, the publish fails as a lost connection, `isStalled` said so
/// meanwhile, and the next connection takes the second node (second audit, finding 1). Before,
/// the connection thread waited in poll(2) without a deadline: heartbeats, confirm timeouts and
/// `close` never ran again.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SilentNodePublishTests {
    @Test func aWriteStuckOnASilentNodeIsGivenUpWithinTwoHeartbeatsAndTheNextNodeTaken() async throws {
        let broker = try await TestBroker.shared()
        let direct = try broker.settings(heartbeatSeconds: 2)
        let relay = try FreezingRelay(targetPort: direct.port)
        defer { relay.close() }
        var settings = try AMQPSettings(url: "amqp://guest:guest@127.0.0.1:\(relay.port)/,amqp://guest:guest@127.0.0.1:\(direct.port)/")
        settings.heartbeatSeconds = 2
        let queue = broker.uniqueName("silent-node")
        defer { try? broker.delete(queues: [queue], settings: direct) }
        try declareTestQueue(queue, settings: direct)

        let first = try await ConfirmingPublisher.connect(settings: settings)
        try await first.publish(exchange: "", routingKey: queue, body: Data("before".utf8))
        #expect(relay.connections == 1, "the first node was not the relay")
        relay.freeze()
        // 16 MB in one batch: far more than the sockets hold, so the write has to wait.
        let body = Data(repeating: 0x61, count: 16 << 10)
        let frozenAt = ContinuousClock.now
        let publishing = Task { await first.publish(batch: (0..<1024).map { _ in .init(exchange: "", routingKey: queue, body: body) }) }
        var stalledSeen = false
        while !first.isStalled(longerThan: .seconds(1)), ContinuousClock.now - frozenAt < .seconds(4) { try await Task.sleep(for: .milliseconds(50)) }
        stalledSeen = first.isStalled(longerThan: .seconds(1))
        let outcomes = await publishing.value
        let failedAfter = ContinuousClock.now - frozenAt
        #expect(stalledSeen, "isStalled never said so")
        #expect(outcomes.allSatisfy { $0?.code == .connectionLost }, "\(outcomes.compactMap { $0 }.prefix(3))")
        #expect(failedAfter < .seconds(8), "given up after \(failedAfter)")
        #expect(!first.isAlive)

        let second = try await ConfirmingPublisher.connect(settings: settings)
        try await second.publish(exchange: "", routingKey: queue, body: Data("after".utf8))
        #expect(relay.connections == 1, "the reconnect went back to the silent node")
        await second.close()
        let closing = ContinuousClock.now
        await first.close()
        #expect(ContinuousClock.now - closing < .seconds(1), "closing the dead publisher waited")
        print("silent node: a 16 MB write to a frozen node failed after \(failedAfter)")
    }

    /// The commands' client (dlq, send, topology) writes through librabbitmq's own sends, which
    /// wait for a full socket without a deadline: the kernel now ends such a connection
    /// (TCP_USER_TIMEOUT, zero window included) within two heartbeats.
    @Test func aLibrabbitmqSendStuckOnASilentNodeFailsWithinTwoHeartbeats() async throws {
        let broker = try await TestBroker.shared()
        let direct = try broker.settings(heartbeatSeconds: 2)
        let relay = try FreezingRelay(targetPort: direct.port)
        defer { relay.close() }
        var relayed = direct
        relayed.port = relay.port
        let settings = relayed
        let queue = broker.uniqueName("silent-client")
        defer { try? broker.delete(queues: [queue], settings: direct) }
        try declareTestQueue(queue, settings: direct)
        let outcome = await onItsOwnThread { () -> (AMQPError?, Duration) in
            guard let client = try? AMQPChannelClient(settings: settings) else { return (nil, .zero) }
            defer { client.close() }
            relay.freeze()
            let started = ContinuousClock.now
            do {
                try client.publishConfirmed(exchange: "", routingKey: queue, body: Data(repeating: 0x62, count: 16 << 20))
                return (nil, ContinuousClock.now - started)
            } catch {
                return (error as? AMQPError ?? AMQPError.protocolError("\(error)"), ContinuousClock.now - started)
            }
        }
        let error = try #require(outcome.0, "a 16 MB publish to a frozen node was confirmed, or no connection was made")
        #expect(error.code == AMQPError.Code.connectionLost || error.code == AMQPError.Code.connectionFailed, "\(error)")
        #expect(outcome.1 > .zero && outcome.1 < .seconds(8), "failed after \(outcome.1): \(error)")
    }
}

/// `work` on a new OS thread, awaited (a blocking librabbitmq call).
private func onItsOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { done in Thread.detachNewThread { done.resume(returning: work()) } }
}
