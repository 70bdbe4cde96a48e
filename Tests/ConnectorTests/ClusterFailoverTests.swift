import AMQP
import BrokerHarness
import Foundation
import PushCore
import Testing
@testable import Connector

/// The worker on a three-node RabbitMQ cluster (scripts/test-cluster.sh), given the three nodes'
/// URLs: the node it is connected to is SIGKILLed mid-run, later the node leading the job
/// queue. It fails over to the surviving nodes and nothing is lost; a send repeats only within
/// the prefetch window (`runThroughACut`). The quorum queues (jobs, retry, DLQ) keep working on
/// two nodes of three.
@Suite(.serialized, .timeLimit(.minutes(6))) struct ClusterFailoverTests {
    @Test func workerFailsOverWhenItsNodeDiesAndWhenTheJobQueueLeaderDies() async throws {
        let cluster = try await TestBroker.cluster()
        do {
            try await losingTheWorkersNode(cluster)
            try await losingTheJobQueueLeader(cluster)
        } catch {
            try? await cluster.stopCluster()
            throw error
        }
        try await cluster.stopCluster()
    }

    private func losingTheWorkersNode(_ cluster: TestBroker) async throws {
        let f = try await PipelineFixture(broker: cluster)
        var killed: Int?
        try await runThroughACut(f) {
            let nodes = try connectedNodes(cluster, vhost: f.settings.vhost)
            #expect(nodes.count == 1, "the worker's connections are on nodes \(nodes)")
            guard let node = nodes.first else { throw FixtureError("the worker has no connection on the cluster") }
            killed = node
            try await cluster.killNode(node)
        }
        // The survivors hold the worker now; the killed node comes back and rejoins.
        let after = try connectedNodes(cluster, vhost: f.settings.vhost)
        #expect(killed.map { !after.contains($0) } ?? false)
        try await cluster.resumeNode(try #require(killed))
    }

    private func losingTheJobQueueLeader(_ cluster: TestBroker) async throws {
        let f = try await PipelineFixture(broker: cluster)
        var killed: Int?
        try await runThroughACut(f) {
            let leader = try jobQueueLeader(cluster, f.topology.jobsQueue)
            killed = leader
            try await cluster.killNode(leader)
        }
        #expect(try jobQueueLeader(cluster, f.topology.jobsQueue) != killed, "a surviving node leads the job queue")
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 0, "the DLQ answers on the surviving nodes")
    }

    /// The cluster node numbers (1-3) that client connections of `vhost` are open to, from the
    /// server port of each connection (node N listens on the port of the N-th URL).
    private func connectedNodes(_ cluster: TestBroker, vhost: String) throws -> Set<Int> {
        let ports = try AMQPSettings(url: cluster.url).nodes.map(\.port)
        let output = try cluster.rabbitmqctl(["list_connections", "--no-table-headers", "vhost", "port"])
        var nodes = Set<Int>()
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            guard fields.count == 2, fields[0] == vhost, let port = Int(fields[1]),
                  let index = ports.firstIndex(of: port) else { continue }
            nodes.insert(index + 1)
        }
        return nodes
    }

    /// The cluster node number (1-3) leading quorum queue `queue`.
    private func jobQueueLeader(_ cluster: TestBroker, _ queue: String) throws -> Int {
        let output = try cluster.rabbitmqctl(["list_queues", "--no-table-headers", "name", "leader"])
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count == 2, fields[0] == queue, let number = cluster.nodeNumber(String(fields[1])) { return number }
        }
        throw FixtureError("no leader found for \(queue) in:\n\(output)")
    }
}
