import AMQP
import Foundation
import OSThread
import PushCore
import Testing
@testable import Connector
@testable import PushWorker

/// The worker against a broker reached over TLS (amqps://, the deploy manifests' scheme): the
/// test broker's TLS listener, its throwaway CA trusted, the peer and host name verified. Over
/// TLS too the lane's results go through its `LoopPublisher`, written through librabbitmq's SSL
/// socket without waiting (decision 0090): the test pins that this path delivers every job once,
/// with no task per job and no thread hand-off, and that every connection of the worker is TLS.
@Suite(.serialized, .timeLimit(.minutes(2))) struct WorkerOverTLSTests {
    @Test func jobsOfOneAndOfTenRecipientsAreSentPublishedAndAckedOverTLSOnTheirLane() async throws {
        let f = try await PipelineFixture()
        let worker = try f.makeWorker(prefetch: 50, lanes: 1, overTLS: true)
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("warm-up", tokens: ["dev-warm"])])
        try await eventually("the warm-up job acked") { worker.counters.acked.load(ordering: .relaxed) >= 1 }

        let (single, tens) = (100, 20)
        let (handoffsBefore, tasksBefore) = (ThreadHandoffs.count, worker.counters.jobTasks.load(ordering: .relaxed))
        let client = try AMQPChannelClient(settings: f.settings)
        defer { client.close() }
        for i in 0..<single {
            try client.publishConfirmed(exchange: f.topology.jobsExchange, routingKey: f.topology.jobsRoutingKey,
                                        body: Data(jobJSON("one-\(i)", tokens: ["dev-one-\(i)"]).utf8))
        }
        for i in 0..<tens {
            try client.publishConfirmed(exchange: f.topology.jobsExchange, routingKey: f.topology.jobsRoutingKey,
                                        body: Data(jobJSON("ten-\(i)", tokens: (0..<10).map { "dev-ten-\(i)-\($0)" }).utf8))
        }
        try await eventually("every job acked") { worker.counters.acked.load(ordering: .relaxed) >= 1 + single + tens }
        let handoffs = ThreadHandoffs.count - handoffsBefore
        let tasks = worker.counters.jobTasks.load(ordering: .relaxed) - tasksBefore
        let connections = try f.broker.rabbitmqctl(["list_connections", "ssl", "client_properties", "--no-table-headers", "--quiet"])
        shutdown.trigger()
        await task.value

        let results = try await f.results(1 + single + tens * 10)
        #expect(results.count == 1 + single + tens * 10 && results.allSatisfy { $0.outcome == .sent })
        #expect(Set(results.map { "\($0.jobID) \($0.target.value)" }).count == 1 + single + tens * 10, "one result per recipient, none twice")
        #expect(try await f.remainingResults().isEmpty, "no result beyond one per recipient")
        #expect(try client.messageCount(queue: f.topology.jobsQueue) == 0, "every job acked")
        #expect(tasks == 0, "no job went on in a task: \(tasks)")
        let workers = connections.split(separator: "\n").filter { $0.contains(PipelineFixture.tlsConnectionName) }
        #expect(workers.count >= 2, "the lane's consumer and publisher connections: \(connections)")
        #expect(workers.allSatisfy { $0.hasPrefix("true") }, "every connection of the worker is a TLS one: \(workers)")
        #expect(handoffs == 0, "\(Double(handoffs) / Double(single + tens)) hand-offs per job over TLS (2.0 through the publisher thread)")
    }
}
