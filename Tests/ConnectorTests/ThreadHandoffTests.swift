import AMQP
import Foundation
import OSThread
import PushCore
import Testing
@testable import Connector
@testable import PushWorker

/// How often a job's work moves from one thread to another on the worker's happy path (jobs of
/// one target, the access token cached, nothing blocked), counted by the `ThreadHandoffs` probe
/// over a real broker and the emulator. The lane's goal is none (decision 0082); this pins where
/// it stands, so that a change adding a hop fails.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ThreadHandoffTests {
    @Test func aOneTargetJobCrossesTwoThreadsAndNeedsNoTask() async throws {
        let f = try await PipelineFixture()
        let worker = try f.makeWorker(prefetch: 50)
        let (shutdown, task) = f.startWorker(worker)
        // The first job fetches the access token and opens the HTTP/2 connection (in a task).
        try await f.publish([jobJSON("warm-up", tokens: ["dev-warm"])])
        try await eventually("the warm-up job acked") { worker.counters.acked.load(ordering: .relaxed) >= 1 }

        // Published with a blocking client: the test's own publishes cross no loop thread.
        let jobs = 200
        let client = try AMQPChannelClient(settings: f.settings)
        defer { client.close() }
        let (handoffsBefore, tasksBefore) = (ThreadHandoffs.count, worker.counters.jobTasks.load(ordering: .relaxed))
        for i in 0..<jobs {
            try client.publishConfirmed(exchange: f.topology.jobsExchange, routingKey: f.topology.jobsRoutingKey,
                                        body: Data(jobJSON("job-\(i)", tokens: ["dev-\(i)"]).utf8))
        }
        try await eventually("every job acked") { worker.counters.acked.load(ordering: .relaxed) >= 1 + jobs }
        let handoffs = ThreadHandoffs.count - handoffsBefore
        let tasks = worker.counters.jobTasks.load(ordering: .relaxed) - tasksBefore
        shutdown.trigger()
        await task.value

        let results = try await f.results(1 + jobs)
        #expect(results.allSatisfy { $0.outcome == .sent } && Set(results.map(\.jobID)).count == 1 + jobs)
        #expect(tasks == 0, "no job of one target went on in a task: \(tasks)")
        // Consumer thread → publisher (the results), publisher → consumer (the ack): two per job.
        // The delivery is taken, and its request sent and answered, on the consumer thread (the
        // lane's HTTP/2 engine is a source of its poll set). A few more may come from what a
        // previous test left closing; one more hop per job is 200.
        #expect((2 * jobs...2 * jobs + 20).contains(handoffs), "hand-offs per job: \(Double(handoffs) / Double(jobs))")
    }
}
