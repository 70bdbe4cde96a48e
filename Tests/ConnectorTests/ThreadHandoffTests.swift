import AMQP
import FCM
import Foundation
import OSThread
import PushCore
import Testing
@testable import Connector
@testable import PushWorker

/// How often a job's work moves from one thread to another on the worker's happy path (the
/// access token cached, nothing blocked), counted by the `ThreadHandoffs` probe over a real
/// broker and the emulator. The lane's goal is none (decision 0082), reached by decisions 0086
/// and 0087: the delivery, its requests and answers, its results' publish and confirm and its
/// ack all happen on the lane's consumer thread, whatever the job's number of recipients.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ThreadHandoffTests {
    @Test func aOneTargetJobStaysOnItsLaneThreadAndNeedsNoTask() async throws {
        try await expectNoHandoffs(jobs: 200, recipients: 1)
    }

    /// Ten recipients: ten requests through the send window, ten results in one publish round.
    @Test func aTenTargetJobStaysOnItsLaneThreadAndNeedsNoTask() async throws {
        try await expectNoHandoffs(jobs: 100, recipients: 10)
    }

    /// Two lanes sharing a window of eight sends: each lane holds its own four, so a permit freed
    /// by one lane's answer lets in a job of the same lane, never continues the other lane's job
    /// on this thread (whose results would then be published and acked across threads).
    @Test func twoLanesNeverRunEachOthersJobs() async throws {
        try await expectNoHandoffs(jobs: 100, recipients: 10, lanes: 2, maxInFlight: 8)
    }

    /// A project at its rate: each send's turn is given by the pacing timer's thread. The job
    /// comes back to its lane's thread there (one hand-off per job), and its send, answer,
    /// publish and ack happen on the lane: not sent from the timer's thread through the
    /// transport's own connection, answered on that thread and published and acked from there
    /// (two hand-offs per job, and a loop publisher opened on the transport's thread).
    @Test func aPacedJobGoesBackToItsLaneThreadForItsSendAndPublish() async throws {
        let jobs = 100
        try await expectNoHandoffs(jobs: jobs, recipients: 1, allowed: (jobs / 2)...(jobs + 40)) { fcm in
            fcm.rateLimit.perMinute = 12_000  // 200 a second, one at a time: every send waits its turn
            fcm.rateLimit.burst = 1
        }
    }

    func expectNoHandoffs(jobs: Int, recipients: Int, lanes: Int = 1, maxInFlight: Int? = nil, allowed: ClosedRange<Int> = 0...40,
                          configureFCM: (inout FCMClient.Configuration) -> Void = { _ in }) async throws {
        let f = try await PipelineFixture()
        let worker = try f.makeWorker(prefetch: 50, lanes: lanes) { fcm in
            if let maxInFlight { fcm.transport.maxInFlight = maxInFlight }
            configureFCM(&fcm)
        }
        let (shutdown, task) = f.startWorker(worker)
        // The first job fetches the access token and opens the HTTP/2 connection (in a task).
        try await f.publish([jobJSON("warm-up", tokens: ["dev-warm"])])
        try await eventually("the warm-up job acked") { worker.counters.acked.load(ordering: .relaxed) >= 1 }
        // Its results opened the lane's loop publisher (on a thread of its own); the next ones
        // may still go through the publisher thread while it opens.
        let warm = 11
        try await f.publish((1..<warm).map { jobJSON("warm-up-\($0)", tokens: ["dev-warm-\($0)"]) })
        try await eventually("the warm-up jobs acked") { worker.counters.acked.load(ordering: .relaxed) >= warm }

        // Published with a blocking client: the test's own publishes cross no loop thread.
        let client = try AMQPChannelClient(settings: f.settings)
        defer { client.close() }
        let (handoffsBefore, tasksBefore) = (ThreadHandoffs.count, worker.counters.jobTasks.load(ordering: .relaxed))
        for i in 0..<jobs {
            try client.publishConfirmed(exchange: f.topology.jobsExchange, routingKey: f.topology.jobsRoutingKey,
                                        body: Data(jobJSON("job-\(i)", tokens: (0..<recipients).map { "dev-\(i)-\($0)" }).utf8))
        }
        try await eventually("every job acked") { worker.counters.acked.load(ordering: .relaxed) >= warm + jobs }
        let handoffs = ThreadHandoffs.count - handoffsBefore
        let tasks = worker.counters.jobTasks.load(ordering: .relaxed) - tasksBefore
        shutdown.trigger()
        await task.value

        let results = try await f.results(warm + jobs * recipients)
        #expect(results.count == warm + jobs * recipients && results.allSatisfy { $0.outcome == .sent })
        #expect(Set(results.map(\.jobID)).count == warm + jobs)
        #expect(tasks == 0, "no job went on in a task: \(tasks)")
        // The lane's HTTP/2 engine and loop publisher are sources of the consumer thread's poll
        // set: none per job. The probe counts the whole process, so what a previous test left
        // closing may add a few (up to 22 seen in a whole-suite run); one hop per job is 200
        // (one target) or 100 (ten), one per send 200 or 1000, the publisher thread's two per job
        // 400 or 200.
        #expect(allowed.contains(handoffs), "hand-offs per job: \(Double(handoffs) / Double(jobs)) (\(handoffs))")
    }
}
