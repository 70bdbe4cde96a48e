import AMQP
import BrokerHarness
import Foundation
import Glibc
import OSThread
import Synchronization
import Testing

/// `AMQPConsumer.start(handler:)`: deliveries handed to the handler on the connection thread, as
/// read, with no task and no stream in between (the worker's lanes take jobs this way).
@Suite("A consumer's handler takes deliveries on its connection thread", .timeLimit(.minutes(1)))
struct ConsumerHandlerTests {
    /// What the handler saw: the bodies in order and the threads it ran on.
    final class Seen: Sendable {
        private let state = Mutex<(bodies: [String], threads: Set<UInt>)>(([], []))
        func add(_ delivery: Delivery) {
            let thread = UInt(pthread_self())
            state.withLock {
                $0.bodies.append(String(decoding: delivery.body, as: UTF8.self))
                $0.threads.insert(thread)
            }
        }
        var bodies: [String] { state.withLock { $0.bodies } }
        var threads: Set<UInt> { state.withLock { $0.threads } }
    }

    @Test func everyDeliveryReachesTheHandlerInOrderOnOneThreadWithoutAHandoffAndTheStreamOnlyEnds() async throws {
        let total = 200
        let (broker, settings, queue, client) = try await queueHolding(total, name: "handler")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        defer { client.close() }

        let seen = Seen()
        let handoffsBefore = ThreadHandoffs.count
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 50, handler: { delivery, consumer in
            seen.add(delivery)
            consumer.ack(delivery.deliveryTag)  // from the connection thread itself: no hand-off
        })
        try await waitUntil("\(total) deliveries to the handler", seconds: 15) { seen.bodies.count >= total }
        let handoffs = ThreadHandoffs.count - handoffsBefore
        consumer.cancel()
        let streamed = try await withDeadline(10, "the stream's end after cancel") {
            var count = 0
            for try await _ in consumer.deliveries { count += 1 }
            return count
        }
        await consumer.close()

        #expect(seen.bodies == (0..<total).map { "m\($0)" }, "every delivery once, in the queue's order")
        #expect(seen.threads.count == 1, "one thread, the connection's: \(seen.threads.count)")
        #expect(!seen.threads.contains(UInt(pthread_self())))
        // None of the 200 deliveries or their acks crosses a thread (the probe is per process: a
        // few may come from what a previous test left closing; a hop per delivery would be 200).
        #expect(handoffs < 20, "the handler and its acks cross no thread, counted \(handoffs)")
        #expect(streamed == 0, "the stream carries no delivery when a handler takes them")
        #expect(try client.messageCount(queue: queue) == 0, "every ack landed")
    }

    @Test func aStreamConsumerCountsAHandoffPerDelivery() async throws {
        let (broker, settings, queue, client) = try await queueHolding(20, name: "streamed")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        defer { client.close() }
        let before = ThreadHandoffs.count
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 50)
        let taken = try await take(20, from: consumer)
        let handoffs = ThreadHandoffs.count - before
        await consumer.close()
        #expect(taken.count == 20)
        #expect(handoffs >= 20, "each delivery crosses from the connection thread to the reading task: \(handoffs)")
    }

    /// `execute` brings work back to the connection thread (where the handler runs, with its
    /// `PollLoop` current), in order with the settlements around it; once the consumer is
    /// closed (`hasEnded`) the work runs at once on the caller's thread instead of being dropped.
    @Test func executedWorkRunsOnTheConnectionThreadInOrderAndAtOnceAfterClose() async throws {
        let (broker, settings, queue, client) = try await queueHolding(3, name: "execute")
        defer { try? broker.delete(queues: [queue], settings: settings) }
        defer { client.close() }
        let seen = Seen()
        let ran = Mutex<[(step: Int, thread: UInt, onLoop: Bool)]>([])
        let onItsThread = Mutex<[Bool]>([])
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 50, handler: { delivery, consumer in
            seen.add(delivery)
            onItsThread.withLock { $0.append(consumer.isCurrentThread) }
        })
        try await waitUntil("3 deliveries to the handler", seconds: 15) { seen.bodies.count >= 3 }
        #expect(onItsThread.withLock { $0 } == [true, true, true], "the handler runs on the consumer's thread")
        #expect(!consumer.isCurrentThread, "the test's thread is not")
        for step in 0..<50 {
            consumer.execute { ran.withLock { $0.append((step, UInt(pthread_self()), PollLoop.current != nil)) } }
        }
        try await waitUntil("every executed step ran", seconds: 15) { ran.withLock { $0.count } >= 50 }
        let executed = ran.withLock { $0 }
        #expect(executed.map(\.step) == Array(0..<50), "in submission order")
        #expect(Set(executed.map(\.thread)) == seen.threads, "on the connection thread, the handler's")
        let allOnLoop = executed.allSatisfy { $0.onLoop }
        #expect(allOnLoop, "with the thread's poll loop current")
        #expect(!consumer.hasEnded)

        await consumer.close()
        #expect(consumer.hasEnded, "closed: no settlement lands any more")
        #expect(!consumer.isCurrentThread)
        let after = Mutex<UInt?>(nil)
        consumer.execute { after.withLock { $0 = UInt(pthread_self()) } }
        #expect(after.withLock { $0 } == UInt(pthread_self()), "after close: at once, on the calling thread")
    }

    /// A new queue of the shared broker holding `count` messages `m0`, `m1`, …, with the client that published them.
    private func queueHolding(_ count: Int, name: String) async throws -> (TestBroker, AMQPSettings, String, AMQPChannelClient) {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName(name)
        try declareTestQueue(queue, settings: settings)
        let client = try AMQPChannelClient(settings: settings)
        for i in 0..<count { try client.publishConfirmed(exchange: "", routingKey: queue, body: Data("m\(i)".utf8)) }
        return (broker, settings, queue, client)
    }
}
