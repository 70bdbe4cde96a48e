import AMQP
import BrokerHarness
import Foundation
import OSThread
import Synchronization
import Testing
@testable import PushWorker

/// `LaneThread.of(consumer)` against a real consumer: a step given on another thread runs on the
/// consumer's thread, a step on that thread runs at once, and once the consumer ended every step
/// runs where it is given; `anywhere` runs every step where it is called.
@Suite(.timeLimit(.minutes(1))) struct LaneThreadTests {
    @Test func aStepGivenElsewhereRunsOnTheConsumerThreadAndAtOnceThereAndAfterTheEnd() async throws {
        let broker = try await TestBroker.shared()
        let settings = try broker.settings()
        let queue = broker.uniqueName("lane-thread")
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        _ = try client.declareQueue(queue)
        defer { try? broker.delete(queues: [queue], settings: settings) }
        try client.publishConfirmed(exchange: "", routingKey: queue, body: Data("m".utf8))

        let handlerThread = Mutex<(thread: UInt, here: Bool)?>(nil)
        let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: 10, handler: { _, consumer in
            handlerThread.withLock { $0 = (UInt(pthread_self()), LaneThread.of(consumer).isHere) }
        })
        try await eventually("the delivery reached the handler") { handlerThread.withLock { $0 } != nil }
        let lane = LaneThread.of(consumer)
        #expect(handlerThread.withLock { $0 }?.here == true, "the handler runs on the lane's thread")
        #expect(!lane.isHere, "the test's thread is not the lane's")

        let ran = Mutex<(thread: UInt, nestedRanAtOnce: Bool)?>(nil)
        lane.run {
            let nested = Atomic<Bool>(false)
            lane.run { nested.store(true, ordering: .relaxed) }
            ran.withLock { $0 = (UInt(pthread_self()), nested.load(ordering: .relaxed)) }
        }
        try await eventually("the handed step ran") { ran.withLock { $0 } != nil }
        #expect(ran.withLock { $0 }?.thread == handlerThread.withLock { $0 }?.thread, "on the consumer's thread")
        #expect(ran.withLock { $0 }?.nestedRanAtOnce == true, "a step given on the lane's thread runs at once")

        await consumer.close()
        #expect(!lane.isHere)
        let after = Mutex<UInt?>(nil)
        lane.run { after.withLock { $0 = UInt(pthread_self()) } }
        #expect(after.withLock { $0 } == UInt(pthread_self()), "once the consumer ended: at once, where given")
    }

    @Test func anywhereRunsEveryStepWhereItIsCalled() {
        let lane = LaneThread.anywhere
        #expect(lane.isHere)
        let thread = Mutex<UInt?>(nil)
        lane.run { thread.withLock { $0 = UInt(pthread_self()) } }
        #expect(thread.withLock { $0 } == UInt(pthread_self()))
    }
}
