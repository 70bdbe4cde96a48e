import Foundation

/// A three-node RabbitMQ cluster for one test (scripts/test-cluster.sh): three test-broker
/// nodes joined into one cluster, on their own ports and folders. Its `url` is the
/// comma-separated list of the three nodes' URLs, so settings made from it fail over between
/// them. Starting one takes about a minute; a watchdog stops it when the test process exits.
extension TestBroker {
    /// Starts a cluster for the calling test; stop it with `stopCluster()`.
    public static func cluster() async throws -> TestBroker {
        let dir = "/tmp/pc-test-cluster-\(getpid())-\(UUID().uuidString.prefix(8))"
        let values = try await runScript(["start", "--dir", dir, "--owner-pid", "\(getpid())"], script: "test-cluster.sh")
        guard let urls = values["PUSH_TEST_AMQP_URLS"], let names = values["PUSH_TEST_CLUSTER_NODES"] else {
            throw TestBrokerError("no URLs from the test cluster script")
        }
        let nodes = names.trimmingCharacters(in: CharacterSet(charactersIn: "'")).split(separator: " ").map(String.init)
        return TestBroker(url: urls, node: nodes.first, clusterNodes: nodes, clusterDirectory: dir, rabbitmqctl: dir + "/n1/rabbitmqctl")
    }

    /// SIGKILLs the Erlang VM of cluster node `number` (1-3), as a crashed machine would.
    public func killNode(_ number: Int) async throws {
        _ = try await Self.runScript(["kill", "\(number)", "--dir", try requireCluster()], script: "test-cluster.sh")
    }

    /// Starts cluster node `number` again (same name, ports and data); it rejoins the cluster.
    public func resumeNode(_ number: Int) async throws {
        _ = try await Self.runScript(["resume", "\(number)", "--dir", try requireCluster()], script: "test-cluster.sh")
    }

    /// Stops every node of the cluster and removes its folder.
    public func stopCluster() async throws {
        _ = try await Self.runScript(["stop", "--dir", try requireCluster()], script: "test-cluster.sh")
    }

    /// The number (1-3) of the cluster node named `erlangNode`.
    public func nodeNumber(_ erlangNode: String) -> Int? {
        clusterNodes.firstIndex(of: erlangNode).map { $0 + 1 }
    }

    private func requireCluster() throws -> String {
        guard let clusterDirectory else { throw TestBrokerError("only a cluster() has cluster nodes") }
        return clusterDirectory
    }
}
