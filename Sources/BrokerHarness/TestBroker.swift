import AMQP
import Foundation
import Synchronization

/// One real RabbitMQ node per test process, shared by every test in it.
///
/// `try await TestBroker.shared()` starts an isolated node from Debian's rabbitmq-server
/// through `scripts/test-broker.sh` (own node name, ports, data and log folders), waits until it
/// is up (~7 s), and returns the same broker to every later caller. A watchdog stops the node
/// when the test process exits. If the broker cannot start (or has not started within
/// `PUSH_TEST_BROKER_START_TIMEOUT` seconds, default 90), the call throws a `TestBrokerError`
/// with the script's output, which ends with the tails of the node's logs: tests FAIL, they
/// never skip.
///
/// Set `PUSH_TEST_AMQP_URL` to use an already running broker instead (for example one started by
/// `eval "$(scripts/test-broker.sh start)"`, which also prints `PUSH_TEST_BROKER_NODE`; export
/// both). `makeVhost` and `closeAllConnections` need the node name to run `rabbitmqctl`.
///
/// Isolation: `makeVhost()` gives a fresh vhost (two rabbitmqctl calls, ~1–2 s); `uniqueName`
/// gives unique queue/exchange names (free). Tests that close connections use a vhost of their own.
/// Cleanup: a test deletes what it made (`deleteVhost`, `deleteTopology`, `delete(queues:)`), so
/// the shared node does not fill up with quorum queues over a run.
public final class TestBroker: Sendable {
    /// The AMQP URL of the default vhost "/".
    public let url: String
    /// Erlang node name for `rabbitmqctl -n`, nil when unknown (external broker without it).
    public let node: String?
    /// The AMQP-over-TLS URL of "/" (its `cacertfile` the node's throwaway CA); nil for a broker
    /// started elsewhere without `PUSH_TEST_AMQPS_URL`.
    public let tlsURL: String?

    /// The folder of a node this process started with `dedicated()` (nil for the shared one).
    let directory: String?
    /// The Erlang node names of a `cluster()`, node 1 first (empty for a single node).
    public let clusterNodes: [String]
    /// The folder of a `cluster()` (test-cluster.sh's BASE).
    let clusterDirectory: String?
    /// The `rabbitmqctl` of the node's RabbitMQ line (`PUSH_TEST_RABBITMQ_LINE`): the wrapper
    /// test-broker.sh writes into the node's folder, or the host's for a broker started elsewhere.
    let rabbitmqctlPath: String

    private static let startup = Mutex<Task<TestBroker, any Error>?>(nil)
    private let counter = Atomic<Int>(0)

    init(url: String, node: String?, directory: String? = nil, clusterNodes: [String] = [], clusterDirectory: String? = nil,
         rabbitmqctl: String? = nil, tlsURL: String? = nil) {
        self.url = url
        self.tlsURL = tlsURL
        rabbitmqctlPath = rabbitmqctl ?? "/usr/sbin/rabbitmqctl"
        self.node = node
        self.directory = directory
        self.clusterNodes = clusterNodes
        self.clusterDirectory = clusterDirectory
    }

    /// A second node for this test alone (~7 s to start), for tests that restart a whole node;
    /// stop it with `stopNode()` (a watchdog stops it anyway when the test process exits).
    public static func dedicated() async throws -> TestBroker {
        let dir = "/tmp/pc-test-broker-\(getpid())-\(UUID().uuidString.prefix(8))"
        let values = try await runScript(["start", "--dir", dir, "--owner-pid", "\(getpid())"])
        guard let url = values["PUSH_TEST_AMQP_URL"] else { throw TestBrokerError("no URL from the test broker script") }
        return TestBroker(url: url, node: values["PUSH_TEST_BROKER_NODE"], directory: dir, rabbitmqctl: values["PUSH_TEST_RABBITMQCTL"],
                          tlsURL: values["PUSH_TEST_AMQPS_URL"])
    }

    /// Stops the whole node of `dedicated()` (its Erlang VM) and starts it again with the same
    /// name, port and data; returns once it accepts connections again.
    public func restartNode() async throws {
        guard let directory else { throw TestBrokerError("only a dedicated() node may be restarted") }
        _ = try await Self.runScript(["restart", "--dir", directory])
    }

    /// Stops the node of `dedicated()` and removes its folder.
    public func stopNode() async throws {
        guard let directory else { throw TestBrokerError("only a dedicated() node may be stopped") }
        _ = try await Self.runScript(["stop", "--dir", directory])
    }

    /// The broker of this test process, started on first use.
    public static func shared() async throws -> TestBroker {
        let task = startup.withLock { task in
            if let task { return task }
            let created = Task.detached { try await Self.startOrAttach() }
            task = created
            return created
        }
        return try await task.value
    }

    /// Settings for `vhost` (default "/"), with a short heartbeat when asked.
    public func settings(vhost: String = "/", heartbeatSeconds: Int = 30,
                         connectionName: String = "push-connector-test") throws -> AMQPSettings {
        try Self.settings(url: url, vhost: vhost, heartbeatSeconds: heartbeatSeconds, connectionName: connectionName)
    }

    /// `settings`, over TLS (the node's TLS listener, its CA trusted, the peer and host name
    /// verified). Throws when the broker has none: a broker given by `PUSH_TEST_AMQP_URL` needs
    /// `PUSH_TEST_AMQPS_URL` too for the tests that need it.
    public func tlsSettings(vhost: String = "/", heartbeatSeconds: Int = 30,
                            connectionName: String = "push-connector-test") throws -> AMQPSettings {
        guard let tlsURL else { throw TestBrokerError("the test broker has no TLS listener: set PUSH_TEST_AMQPS_URL with PUSH_TEST_AMQP_URL") }
        return try Self.settings(url: tlsURL, vhost: vhost, heartbeatSeconds: heartbeatSeconds, connectionName: connectionName)
    }

    private static func settings(url: String, vhost: String, heartbeatSeconds: Int, connectionName: String) throws -> AMQPSettings {
        var settings = try AMQPSettings(url: url)
        settings.vhost = vhost
        settings.heartbeatSeconds = heartbeatSeconds
        settings.connectionName = connectionName
        return settings
    }

    /// A name no other test of this process uses: `base-<pid>-<n>`.
    public func uniqueName(_ base: String) -> String {
        "\(base)-\(getpid())-\(counter.add(1, ordering: .relaxed).newValue)"
    }

    /// Creates a fresh vhost with full permissions for the URL's user and returns its settings.
    public func makeVhost(heartbeatSeconds: Int = 30) throws -> AMQPSettings {
        let vhost = uniqueName("test")
        let base = try settings()
        try rabbitmqctl(["add_vhost", vhost])
        try rabbitmqctl(["set_permissions", "-p", vhost, base.user, ".*", ".*", ".*"])
        return try settings(vhost: vhost, heartbeatSeconds: heartbeatSeconds)
    }

    /// Deletes a vhost made by `makeVhost` and everything in it (queues, exchanges, policies).
    /// Call it from the test that made it (`defer`), so the shared node does not fill up.
    public func deleteVhost(_ vhost: String) throws {
        guard vhost != "/" else { throw TestBrokerError("refusing to delete the default vhost") }
        try rabbitmqctl(["delete_vhost", vhost])
    }

    /// Deletes a test's queues and exchanges from the node: those of `topology` and any
    /// `extraQueues` it declared besides (names already gone are fine). For tests on the shared
    /// vhost, which cannot simply drop a vhost of their own.
    public func deleteTopology(_ topology: Topology, extraQueues: [String] = [], settings: AMQPSettings) throws {
        try delete(queues: topology.queues.map(\.name) + extraQueues, exchanges: topology.exchanges.map(\.name), settings: settings)
    }

    /// Deletes queues and exchanges a test declared on `settings`' vhost (missing ones are fine).
    public func delete(queues: [String], exchanges: [String] = [], settings: AMQPSettings) throws {
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        for queue in queues { try client.deleteQueue(queue) }
        for exchange in exchanges { try client.deleteExchange(exchange) }
    }

    /// Closes every client connection of `vhost` (all vhosts when nil) from the broker side,
    /// like an operator or a failing node would (`rabbitmqctl close_all_connections`).
    public func closeAllConnections(vhost: String? = nil, reason: String) throws {
        var args = ["close_all_connections"]
        if let vhost { args += ["--vhost", vhost] } else { args += ["--global"] }
        try rabbitmqctl(args + [reason])
    }

    /// Runs `rabbitmqctl -q -n NODE args…` and returns its standard output.
    @discardableResult
    public func rabbitmqctl(_ arguments: [String]) throws -> String {
        guard let node else {
            throw TestBrokerError("rabbitmqctl needs the node name: set PUSH_TEST_BROKER_NODE with PUSH_TEST_AMQP_URL")
        }
        // On a cluster, any running node answers for the cluster: try them in turn.
        var result = try runProcess(rabbitmqctlPath, ["-q", "-n", node] + arguments)
        for other in clusterNodes where other != node && result.status != 0 {
            result = try runProcess(rabbitmqctlPath, ["-q", "-n", other] + arguments)
        }
        guard result.status == 0 else {
            throw TestBrokerError("rabbitmqctl \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)")
        }
        return result.output
    }

    // MARK: startup

    private static func startOrAttach() async throws -> TestBroker {
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["PUSH_TEST_AMQP_URL"], !url.isEmpty {
            return TestBroker(url: url, node: environment["PUSH_TEST_BROKER_NODE"], rabbitmqctl: environment["PUSH_TEST_RABBITMQCTL"],
                              tlsURL: environment["PUSH_TEST_AMQPS_URL"].flatMap { $0.isEmpty ? nil : $0 })
        }
        let values = try await runScript(["start", "--dir", "/tmp/pc-test-broker-\(getpid())", "--owner-pid", "\(getpid())"])
        guard let url = values["PUSH_TEST_AMQP_URL"] else { throw TestBrokerError("no URL from the test broker script") }
        return TestBroker(url: url, node: values["PUSH_TEST_BROKER_NODE"], rabbitmqctl: values["PUSH_TEST_RABBITMQCTL"],
                          tlsURL: values["PUSH_TEST_AMQPS_URL"])
    }

    /// Runs scripts/test-broker.sh (or another script of scripts/) off the cooperative pool; its
    /// `KEY=value` lines, or a `TestBrokerError` with the script's output when it fails.
    static func runScript(_ arguments: [String], script name: String = "test-broker.sh") async throws -> [String: String] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/\(name)").path
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    let result = try runProcess(script, arguments)
                    var values: [String: String] = [:]
                    for line in result.output.split(separator: "\n") {
                        let pair = line.split(separator: "=", maxSplits: 1)
                        if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
                    }
                    guard result.status == 0 else {
                        throw TestBrokerError("""
                            the test broker script failed (\(script) \(arguments.first ?? "") exited \(result.status)); \
                            RabbitMQ integration tests cannot run. Output:
                            \(result.output)
                            """)
                    }
                    return values
                })
            }
        }
    }
}

/// Why the test broker could not be started or driven (fails the test with this message).
public struct TestBrokerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Runs a program to completion; output is stdout and stderr together.
///
/// posix_spawn + waitpid rather than Foundation's Process: the broker script leaves daemons
/// behind (node, watchdog), and Process did not reliably notice the script's exit from a
/// non-main thread. The output goes through a temporary file, never a pipe a daemon could hold.
func runProcess(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let outputPath = NSTemporaryDirectory() + "pc-broker-\(getpid())-\(UUID().uuidString).out"
    let fd = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { throw TestBrokerError("cannot create \(outputPath)") }
    defer { unlink(outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, fd, 1)
    posix_spawn_file_actions_adddup2(&actions, fd, 2)
    posix_spawn_file_actions_addclose(&actions, fd)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
    close(fd)
    guard spawned == 0 else { throw TestBrokerError("cannot run \(path): errno \(spawned)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    let data = FileManager.default.contents(atPath: outputPath) ?? Data()
    return (exitStatus, String(decoding: data, as: UTF8.self))
}
