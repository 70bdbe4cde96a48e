import AMQP
import BrokerHarness
import Foundation
import Testing

/// `--amqp-url` with several comma-separated URLs (the nodes of one cluster): parsing,
/// redaction, and the order in which connections try the nodes.
@Suite("AMQP cluster node lists", .serialized, .timeLimit(.minutes(2)))
struct ClusterNodeListTests {
    @Test func aCommaSeparatedListNamesEveryNodeWithSharedCredentials() throws {
        let s = try AMQPSettings(url: "amqp://app:s3cret@rabbit-0:5672/prod, amqp://app@rabbit-1:5673/prod,amqps://app@rabbit-2/prod")
        #expect(s.nodes == [AMQPSettings.Node(host: "rabbit-0", port: 5672, tls: nil),
                            AMQPSettings.Node(host: "rabbit-1", port: 5673, tls: nil),
                            AMQPSettings.Node(host: "rabbit-2", port: 5671, tls: AMQPSettings.TLS())])
        #expect(s.user == "app" && s.password == "s3cret" && s.vhost == "prod")
        #expect(s.redactedURL == "amqp://app:***@rabbit-0:5672/prod,amqp://app:***@rabbit-1:5673/prod,amqps://app:***@rabbit-2:5671/prod")
        #expect(!s.redactedURL.contains("s3cret"))
    }

    @Test func aListWhoseURLsDisagreeOnUserVhostOrPasswordIsRefusedWithoutThePassword() {
        for url in ["amqp://a:pw1@h1/v,amqp://b:pw1@h2/v", "amqp://a:pw1@h1/v,amqp://a:pw1@h2/w",
                    "amqp://a:pw1@h1/v,amqp://a:pw2@h2/v", "amqp://a:pw1@h1/v,,amqp://a:pw1@h2/v"] {
            do {
                _ = try AMQPSettings(url: url)
                Issue.record("accepted \(AMQPSettings.redact(url))")
            } catch {
                #expect(error.code == .invalidURL)
                #expect(!"\(error)".contains("pw1") && !"\(error)".contains("pw2"), "\(error)")
            }
        }
    }

    @Test func redactingAListMasksEveryPasswordEvenOneWithARawComma() {
        #expect(AMQPSettings.redact("amqp://u:p1@h1/,amqp://u:p2@h2/") == "amqp://u:***@h1/,amqp://u:***@h2/")
        let split = AMQPSettings.redact("amqp://u:pa,ss@h1/,amqp://u:pa,ss@h2/")
        #expect(!split.contains("pa") && !split.contains("ss@"), "\(split)")
    }

    @Test func aNodeThatRefusesIsSkippedForTheNextOne() async throws {
        let broker = try await TestBroker.shared()
        let live = try broker.settings()
        let closedPort = try unusedPort()
        var settings = try AMQPSettings(url: "amqp://guest:guest@127.0.0.1:\(closedPort)/,\(broker.url)")
        settings.connectionName = "cluster-skip-test"
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        let queue = broker.uniqueName("cluster-skip")
        try client.declareQueue(queue)
        defer { _ = try? client.deleteQueue(queue) }
        #expect(try client.messageCount(queue: queue) == 0)
        #expect(settings.nodes.count == 2 && settings.nodes[1].port == live.port)
    }

    @Test func noNodeAnsweringFailsWithEveryNodeNamedAndNoPassword() throws {
        let a = try unusedPort(), b = try unusedPort()
        do {
            _ = try AMQPChannelClient(settings: try AMQPSettings(url: "amqp://u:hunter2@127.0.0.1:\(a)/,amqp://u:hunter2@127.0.0.1:\(b)/"))
            Issue.record("connected to closed ports")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect("\(error)".contains(":\(a)/") && "\(error)".contains(":\(b)/"), "\(error)")
            #expect(!"\(error)".contains("hunter2"))
        }
    }

    @Test func aLostConnectionSendsTheNextConnectionToTheNextNodeFirst() async throws {
        let broker = try await TestBroker.shared()
        let port = try broker.settings().port
        let vhostSettings = try broker.makeVhost()
        defer { try? broker.deleteVhost(vhostSettings.vhost) }
        // Two names of the one test node stand for two cluster nodes.
        let vhostPath = vhostSettings.vhost.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let settings = try AMQPSettings(url: "amqp://guest:guest@127.0.0.1:\(port)/\(vhostPath),amqp://guest:guest@localhost:\(port)/\(vhostPath)")
        let nodes = settings.nodes
        #expect(AMQPNodeRotation.order(nodes) == [0, 1])
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        let queue = broker.uniqueName("cluster-rotation")
        try client.declareQueue(queue)
        try broker.closeAllConnections(vhost: vhostSettings.vhost, reason: "node going away")
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? client.messageCount(queue: queue)) != nil {
            guard ContinuousClock.now < deadline else { Issue.record("the closed connection still answers"); return }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(AMQPNodeRotation.order(nodes) == [1, 0], "the next connection tries the other node first")
        let again = try AMQPChannelClient(settings: settings)
        defer { again.close() }
        #expect(try again.messageCount(queue: queue) == 0)
        #expect(AMQPNodeRotation.order(nodes) == [1, 0], "the node that answered stays preferred")
    }
}

/// A TCP port nothing listens on (bound, then closed).
func unusedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw AMQPTestError("cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

struct AMQPTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
