import BrokerHarness
@testable import EventStorage
import Foundation
import Testing
@testable import Connector

/// The PostgreSQL adapter against a real server (scripts/test-postgres.sh): parameters and
/// NULLs round-trip, failures carry the SQLSTATE, transactions roll back, secrets stay out of
/// messages.
@Suite(.serialized, .timeLimit(.minutes(2))) struct PostgresDatabaseTests {
    /// A fresh database for one test.
    private func freshDatabase() async throws -> PostgresDatabase {
        let admin = try PostgresDatabase(url: try await TestPostgres.url())
        let name = TestPostgres.uniqueDatabaseName("adapter")
        try admin.execute("CREATE DATABASE \(name)")
        return try PostgresDatabase(url: try await TestPostgres.url(database: name))
    }

    @Test func parametersNullsAndUnicodeRoundTrip() async throws {
        let db = try await freshDatabase()
        try db.executeScript("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, note TEXT)")
        let inserted = try db.execute("INSERT INTO t VALUES ($1, $2, $3)", ["7", "l'été \"à\" 🚀; DROP TABLE t", nil])
        #expect(inserted.changes == 1)
        let rows = try db.execute("SELECT id, name, note FROM t WHERE id = $1", ["7"])
        #expect(rows.count == 1 && rows.columnCount == 3)
        #expect(rows.integer(0, 0) == 7)
        #expect(rows.text(0, 1) == "l'été \"à\" 🚀; DROP TABLE t")
        #expect(rows.text(0, 2) == nil)
    }

    @Test func aUniqueViolationCarriesItsSQLState() async throws {
        let db = try await freshDatabase()
        try db.executeScript("CREATE TABLE t (id TEXT PRIMARY KEY)")
        try db.execute("INSERT INTO t VALUES ($1)", ["a"])
        do {
            try db.execute("INSERT INTO t VALUES ($1)", ["a"])
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(error.isUniqueViolation, "\(error)")
            #expect(error.sqlState == "23505")
        }
        // The connection stays usable, and the idempotent form of the insert changes nothing.
        #expect(try db.execute("INSERT INTO t VALUES ($1) ON CONFLICT DO NOTHING", ["a"]).changes == 0)
    }

    @Test func aThrowingTransactionRollsBackEverything() async throws {
        let db = try await freshDatabase()
        try db.executeScript("CREATE TABLE t (id TEXT PRIMARY KEY)")
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES ($1)", ["x"])
                throw Stop()
            }
        }
        #expect(try db.execute("SELECT count(*) FROM t").integer(0, 0) == 0)
        try db.transaction { try db.execute("INSERT INTO t VALUES ($1)", ["y"]) }
        #expect(try db.execute("SELECT count(*) FROM t").integer(0, 0) == 1)
    }

    /// Every place libpq takes a password is masked: the user info, a `password=` parameter of
    /// the URL, a keyword/value connection string.
    @Test(arguments: [
        ("postgres://push:s3cret@db:5432/events", "postgres://push:***@db:5432/events"),
        ("postgres://push:p@ss@db/events", "postgres://push:***@db/events"),
        ("postgresql://db/events?user=push&password=s3cret&sslmode=require",
         "postgresql://db/events?user=push&password=***&sslmode=require"),
        ("postgres://push@db/events?Password=s3cret", "postgres://push@db/events?Password=***"),
        ("host=db user=push password=s3cret dbname=events", "host=db user=push password=*** dbname=events"),
        // Found by the second audit: a percent-encoded name, sslpassword, a malformed pair that a
        // reader could still decode, quoted and spaced keyword/value forms.
        ("postgres://db/events?p%61ssword=s3cret&sslmode=require", "postgres://db/events?p%61ssword=***&sslmode=require"),
        ("postgres://db/events?sslpassword=s3cret", "postgres://db/events?sslpassword=***"),
        ("postgres://db/events?password%3Ds3cret", "postgres://db/events?***"),
        ("host=db password = 's3 cret' dbname=events", "host=db password = *** dbname=events"),
        ("host=db sslpassword=s3cret", "host=db sslpassword=***"),
        ("host=db password='s3cret", "***"),
    ])
    func redactionMasksEveryPassword(url: String, expected: String) {
        #expect(PostgresDatabase.redact(url) == expected)
        #expect(!PostgresDatabase.redact(url).contains("s3cret") && !PostgresDatabase.redact(url).contains("p@ss"))
    }

    /// A server that takes the TCP connection and never answers (halted, black-holed) fails the
    /// connect after the timeout instead of hanging the caller (the events `/healthz` probe).
    @Test func aServerThatNeverAnswersFailsTheConnectAfterTheTimeout() throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let started = ContinuousClock.now
        #expect(throws: PostgresError.self) {
            _ = try PostgresDatabase(url: "postgres://pc@127.0.0.1:\(silent.port)/push", connectTimeoutSeconds: 2)
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(1.5) && waited < .seconds(8), "gave up after \(waited)")
    }

    @Test func aConnectTimeoutInTheURLTakesPrecedence() throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let started = ContinuousClock.now
        #expect(throws: PostgresError.self) {
            _ = try PostgresDatabase(url: "postgres://pc@127.0.0.1:\(silent.port)/push?connect_timeout=2",
                                     connectTimeoutSeconds: 600)
        }
        #expect(ContinuousClock.now - started < .seconds(8))
    }

    /// `/healthz` of the events service probes the database: an unanswering server is reported
    /// unhealthy within seconds, with the URL's password masked.
    @Test func theHealthProbeReportsAnUnansweringServerWithinSeconds() throws {
        let silent = try SilentPort()
        defer { silent.close() }
        let started = ContinuousClock.now
        let problem = EventsDatabase("postgres://pc:hunter2@127.0.0.1:\(silent.port)/push").problem()
        #expect(problem != nil)
        #expect(!(problem ?? "").contains("hunter2"), "\(problem ?? "")")
        #expect(ContinuousClock.now - started < .seconds(8))
    }

    @Test func aRefusedLoginNamesTheServerButNotThePassword() async throws {
        let url = try await TestPostgres.url()
        let wrong = url.replacingOccurrences(of: "://pc@", with: "://nobody:hunter2@")
        do {
            _ = try PostgresDatabase(url: wrong)
            Issue.record("connected as an unknown role")
        } catch {
            #expect(error.isConnectionLost)
            #expect("\(error)".contains("127.0.0.1"), "\(error)")
            #expect(!"\(error)".contains("hunter2"), "\(error)")
        }
    }
}
