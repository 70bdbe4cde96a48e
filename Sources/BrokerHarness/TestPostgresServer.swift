import Foundation

/// A PostgreSQL server of one test's own (scripts/test-postgres.sh), for outage tests: `halt`
/// stops it at once as a crash would, `resume` starts it again on the same port and data. A
/// watchdog stops it when the test process exits; call `stop` when done.
public final class TestPostgresServer: Sendable {
    public let url: String
    private let directory: String

    private init(url: String, directory: String) {
        self.url = url
        self.directory = directory
    }

    public static func start() async throws -> TestPostgresServer {
        let directory = "/tmp/pc-test-postgres-\(getpid())-\(TestPostgres.uniqueDatabaseName("own"))"
        let values = try await TestBroker.runScript(["start", "--dir", directory, "--owner-pid", "\(getpid())"], script: "test-postgres.sh")
        guard let url = values["PUSH_TEST_POSTGRES_URL"] else { throw TestBrokerError("no URL from the test PostgreSQL script") }
        return TestPostgresServer(url: url, directory: directory)
    }

    public func halt() async throws { _ = try await TestBroker.runScript(["halt", "--dir", directory], script: "test-postgres.sh") }
    public func resume() async throws { _ = try await TestBroker.runScript(["resume", "--dir", directory], script: "test-postgres.sh") }
    public func stop() async { _ = try? await TestBroker.runScript(["stop", "--dir", directory], script: "test-postgres.sh") }
}
