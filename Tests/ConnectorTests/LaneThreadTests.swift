import Foundation
import OSThread
import Synchronization
import Testing
@testable import PushWorker

/// `LaneThread`: a job's step runs at once on its lane's thread and is handed to it from any
/// other thread; `anywhere` runs every step where it is called.
@Suite(.timeLimit(.minutes(1))) struct LaneThreadTests {
    /// A thread with a `PollLoop`, as a lane's consumer thread has, that runs what it is handed.
    final class LoopHost: Sendable {
        private let work = Mutex<[@Sendable () -> Void]>([])
        private let made = Mutex<LaneThread?>(nil)
        let handed = Atomic<Int>(0)
        private let stopping = Atomic<Bool>(false)

        init() {
            OSThread.start(name: "lane-test") { [self] in
                let loop = PollLoop()
                made.withLock { $0 = LaneThread.current(hand: { step in self.handed.add(1, ordering: .relaxed); self.work.withLock { $0.append(step) } }) }
                while !stopping.load(ordering: .relaxed) {
                    for step in work.withLock({ w -> [@Sendable () -> Void] in defer { w = [] }; return w }) { step() }
                    usleep(1000)
                }
                loop.end(within: 0)
            }
        }

        var lane: LaneThread? { made.withLock { $0 } }
        func stop() { stopping.store(true, ordering: .relaxed) }
    }

    @Test func aStepGivenOnAnotherThreadIsHandedToTheLaneAndRunsThere() async throws {
        let host = LoopHost()
        defer { host.stop() }
        try await eventually("the lane thread started") { host.lane != nil }
        let lane = try #require(host.lane)
        #expect(!lane.isHere, "the test's thread is not the lane's")

        let ranOn = Mutex<(onLoop: Bool, hereThen: Bool)?>(nil)
        lane.run { ranOn.withLock { $0 = (PollLoop.current != nil, lane.isHere) } }
        try await eventually("the step ran") { ranOn.withLock { $0 } != nil }
        #expect(ranOn.withLock { $0 }?.onLoop == true && ranOn.withLock { $0 }?.hereThen == true, "on the lane's loop thread")
        #expect(host.handed.load(ordering: .relaxed) == 1)

        // A step run on the lane's thread itself is not handed again.
        let nested = Atomic<Int>(0)
        lane.run { lane.run { nested.add(1, ordering: .relaxed) } }
        try await eventually("the nested step ran") { nested.load(ordering: .relaxed) == 1 }
        #expect(host.handed.load(ordering: .relaxed) == 2, "one hand-over for the outer step, none for the inner")
    }

    @Test func anywhereRunsEveryStepWhereItIsCalled() {
        let lane = LaneThread.anywhere
        #expect(lane.isHere)
        let thread = Mutex<UInt?>(nil)
        lane.run { thread.withLock { $0 = UInt(pthread_self()) } }
        #expect(thread.withLock { $0 } == UInt(pthread_self()))
    }
}
