import Foundation
import OSThread
import AMQP
import PushCore
import Testing
@testable import PushWorker

/// `JobProcessor.share(lane:of:)`: each lane gets pools of its own whose capacities add up to
/// the process's send window and job admission (pure: no network).
@Suite struct LaneShareTests {
    static let app = AppConfiguration(appID: "shop-android", projectID: "shop-prod", credentialsFile: "/dev/null")

    func processor(window: Int, admission: Int) -> JobProcessor {
        var processor = JobProcessor(registry: AppRegistry([Self.app]), sender: TargetWalkTests.AnsweringLater(),
                                     topology: Topology(prefix: "t"))
        processor.sendWindow = PermitPool(capacity: window)
        processor.jobAdmission = PermitPool(capacity: admission)
        return processor
    }

    @Test func lanesShareTheWindowAndTheAdmissionEvenlyAndTheSharesAddUp() {
        let whole = processor(window: 2_001, admission: 4_002)
        let shares = (0..<4).map { whole.share(lane: $0, of: 4) }
        #expect(shares.map { $0.sendWindow?.capacity ?? 0 } == [501, 500, 500, 500])
        #expect(shares.map { $0.jobAdmission?.capacity ?? 0 } == [1_001, 1_001, 1_000, 1_000])
        #expect(shares.allSatisfy { $0.sendWindow !== whole.sendWindow }, "pools of their own")
        #expect(shares[0].sendWindow !== shares[1].sendWindow)
    }

    @Test func oneLaneTakesThePoolsAsTheyAre() {
        let whole = processor(window: 8, admission: 16)
        let only = whole.share(lane: 0, of: 1)
        #expect(only.sendWindow === whole.sendWindow && only.jobAdmission === whole.jobAdmission)
    }

    /// A job's admission goes back to the pool it came from, whichever processor releases it.
    @Test func anAdmittedJobIsReleasedToItsLanesPool() throws {
        let whole = processor(window: 8, admission: 16)
        let lane = whole.share(lane: 1, of: 2)
        let body = #"{"job_id":"j","app_id":"shop-android","notification":{"title":"T"},"recipients":[{"token":"a"},{"token":"b"}]}"#
        nonisolated(unsafe) var admitted: AdmittedJob?
        lane.admit(lane.intake(body: Data(body.utf8), headers: [:])) { admitted = $0 }
        let job = try #require(admitted)
        #expect(lane.jobAdmission?.available == 6 && whole.jobAdmission?.available == 16)
        whole.release(job)
        #expect(lane.jobAdmission?.available == 8 && whole.jobAdmission?.available == 16)
    }
}
