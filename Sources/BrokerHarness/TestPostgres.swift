import Foundation
import Synchronization

/// One real PostgreSQL server per test process (scripts/test-postgres.sh: `initdb` into a
/// temporary folder, its own port on 127.0.0.1), started on first use and stopped by a watchdog
/// when the process exits. If it cannot start, the call throws with the script's output: tests
/// fail, they never skip. Set `PUSH_TEST_POSTGRES_URL` to use a running server instead.
public enum TestPostgres {
    private static let startup = Mutex<Task<String, any Error>?>(nil)
    private static let counter = Atomic<Int>(0)

    /// The URL of the process's server (database `push`, user `pc`, no password).
    public static func url() async throws -> String {
        let task = startup.withLock { task in
            if let task { return task }
            let created = Task.detached { () async throws -> String in
                if let url = ProcessInfo.processInfo.environment["PUSH_TEST_POSTGRES_URL"], !url.isEmpty { return url }
                let values = try await TestBroker.runScript(
                    ["start", "--dir", "/tmp/pc-test-postgres-\(getpid())", "--owner-pid", "\(getpid())"], script: "test-postgres.sh")
                guard let url = values["PUSH_TEST_POSTGRES_URL"] else { throw TestBrokerError("no URL from the test PostgreSQL script") }
                return url
            }
            task = created
            return created
        }
        return try await task.value
    }

    /// A database name no other test of this process uses.
    public static func uniqueDatabaseName(_ base: String) -> String {
        "\(base)_\(getpid())_\(counter.add(1, ordering: .relaxed).newValue)"
    }

    /// The server URL with its database replaced by `database`.
    public static func url(database: String) async throws -> String {
        let base = try await url()
        guard let slash = base.range(of: "/", options: .backwards), base[..<slash.lowerBound].contains("@") else {
            throw TestBrokerError("unexpected PostgreSQL URL \(base)")
        }
        return String(base[..<slash.upperBound]) + database
    }
}
