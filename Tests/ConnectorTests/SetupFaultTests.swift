import AMQP
import EmulatorKit
import FCM
import Foundation
import PushCore
import Testing
@testable import Connector

/// Faults of the setup rather than of a message: an FCM endpoint whose certificate does not name
/// it, a token endpoint that refuses or is down. Each pauses the project: its jobs wait in the
/// retry tiers without using up attempts (nothing dead-lettered, no flood of connections), and
/// are sent once the fault clears. Real broker, real emulators (issue 32, items 1, 3 and 4).
@Suite(.serialized) struct SetupFaultTests {

    /// Certificates in `directory`: a CA, a leaf for `wrong.example` signed by it, and a
    /// self-signed leaf for `wrong.example` (neither names 127.0.0.1).
    static func mismatchedCertificates(in directory: String) throws -> (ca: String, signedChain: String, signedKey: String,
                                                                         selfSigned: String, selfSignedKey: String) {
        let d = directory
        func openssl(_ arguments: [String]) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            p.arguments = arguments
            p.standardError = FileHandle.nullDevice
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw FixtureError("openssl \(arguments.first ?? "") failed") }
        }
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-subj", "/CN=test CA",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                     "-keyout", d + "/ca-key.pem", "-out", d + "/ca.pem"])
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-sha256", "-subj", "/CN=wrong.example",
                     "-keyout", d + "/leaf-key.pem", "-out", d + "/leaf.csr"])
        try "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:wrong.example\n"
            .write(toFile: d + "/leaf.ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", d + "/leaf.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca-key.pem", "-CAcreateserial",
                     "-days", "2", "-sha256", "-extfile", d + "/leaf.ext", "-out", d + "/leaf.pem"])
        let chain = try String(contentsOfFile: d + "/leaf.pem", encoding: .utf8) + String(contentsOfFile: d + "/ca.pem", encoding: .utf8)
        try chain.write(toFile: d + "/leaf-chain.pem", atomically: true, encoding: .utf8)
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-subj", "/CN=wrong.example",
                     "-addext", "subjectAltName=DNS:wrong.example", "-keyout", d + "/self-key.pem", "-out", d + "/self.pem"])
        return (d + "/ca.pem", d + "/leaf-chain.pem", d + "/leaf-key.pem", d + "/self.pem", d + "/self-key.pem")
    }

    enum Chain: String, CaseIterable, Sendable { case signedByTrustedCA, selfSignedTrustedDirectly }

    /// A TLS endpoint whose certificate names another host: the first verification failure fails
    /// the waiting sends, reconnects back off (a handful of connections, not thousands), the
    /// project pauses as `tls`, and the jobs wait in the retry tiers with their attempt unused.
    @Test(arguments: Chain.allCases)
    func aCertificateNamingAnotherHostPausesTheProjectInsteadOfFloodingOrDeadLettering(chain: Chain) async throws {
        let fixture = try await PipelineFixture(retryTiers: [1])
        let certificates = try Self.mismatchedCertificates(in: fixture.directory)
        var tls = EmulatorConfiguration()
        tls.port = 0
        tls.requireAuth = false
        tls.tlsCertificateFile = chain == .signedByTrustedCA ? certificates.signedChain : certificates.selfSigned
        tls.tlsKeyFile = chain == .signedByTrustedCA ? certificates.signedKey : certificates.selfSignedKey
        let endpoint = try FCMEmulator(configuration: tls)
        try endpoint.start()
        defer { endpoint.stop() }
        let worker = try fixture.makeWorker(maxAttempts: 2, prefetch: 1000) { fcm in
            fcm.baseURL = "https://127.0.0.1:\(endpoint.port)"
            fcm.transport.caFile = chain == .signedByTrustedCA ? certificates.ca : certificates.selfSigned
            fcm.transport.requestTimeout = .seconds(30)
        }
        try await fixture.publish((0..<1000).map { jobJSON("tls-\($0)", tokens: ["tok-\($0)"]) })
        let started = ContinuousClock.now
        let (shutdown, task) = fixture.startWorker(worker)
        try await Task.sleep(for: .seconds(5))
        let metrics = worker.metrics.registry.render()
        let connections = endpoint.stats().connectionsAccepted
        shutdown.trigger()
        await task.value
        let stoppedIn = ContinuousClock.now - started - .seconds(5)

        #expect(connections <= 20, "connections opened in 5 s against a mismatched certificate: \(connections)")
        #expect(endpoint.stats().count("sent") == 0)
        #expect(try fixture.messageCount(fixture.topology.deadLetterQueue) == 0, "a setup fault dead-lettered jobs")
        #expect(metrics.contains("push_connector_projects_paused{reason=\"tls\"} 1"), "\(metrics.split(separator: "\n").filter { $0.contains("paused") })")
        #expect(worker.metrics.retries.labels("1s").value > 0, "the jobs did not wait in the retry tier")
        #expect(stoppedIn < .seconds(10), "shutdown took \(stoppedIn)")
        // The jobs waiting in the retry tier and the job queue kept their first attempt.
        let client = try AMQPChannelClient(settings: fixture.settings)
        defer { client.close() }
        var seen = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while seen < 1000, ContinuousClock.now < deadline {  // copies move from the tier back to the job queue meanwhile
            for queue in [fixture.topology.jobsQueue] + fixture.topology.retryTiers.map(\.queue) {
                while let delivery = try client.get(queue: queue) {
                    try client.ack(delivery.deliveryTag)
                    #expect(FailureHeaders.history(delivery.properties.headers).attemptsMade == 0)
                    seen += 1
                }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(seen == 1000, "jobs waiting after the fault: \(seen) of 1000")
    }

    /// The faults of a token endpoint: each pauses the project, so jobs neither dead-letter nor
    /// use up attempts while it lasts; once it clears, every job is sent once, at attempt 1.
    static let tokenFaults: [TokenEndpointFault] = [
        .html(status: 404), .refusal(status: 400, error: "invalid_grant"), .unavailable(status: 500, retryAfterSeconds: nil),
        .garbage, .unavailable(status: 429, retryAfterSeconds: 2),
    ]

    @Test(arguments: tokenFaults)
    func aTokenEndpointFaultPausesTheProjectAndJobsWaitWithTheirAttempts(fault: TokenEndpointFault) async throws {
        let fixture = try await PipelineFixture(retryTiers: [1])
        fixture.emulator.setTokenEndpointFault(fault)
        let worker = try fixture.makeWorker(maxAttempts: 2) { fcm in
            fcm.rateLimit.configurationPause = .seconds(1)
            fcm.rateLimit.tokenOutagePause = .seconds(1)
        }
        let count = 40
        try await fixture.publish((0..<count).map { jobJSON("oauth-\($0)", tokens: ["tok-\($0)"]) })
        let (shutdown, task) = fixture.startWorker(worker)
        defer { shutdown.trigger() }
        try await Task.sleep(for: .seconds(4))
        let during = worker.metrics.registry.render()
        #expect(fixture.emulator.stats().tokenFaultsServed <= 8, "token requests during the fault: \(fixture.emulator.stats().tokenFaultsServed)")
        fixture.emulator.setTokenEndpointFault(nil)
        let results = try await fixture.results(count, timeout: .seconds(30))
        shutdown.trigger()
        await task.value

        #expect(results.allSatisfy { $0.outcome == .sent }, "\(Set(results.map { "\($0.outcome) \($0.error?.code ?? "")" }))")
        #expect(results.allSatisfy { $0.attempts == 1 }, "attempts: \(Set(results.map(\.attempts)))")
        #expect(Set(results.map(\.jobID)).count == count)
        #expect(fixture.emulator.stats().count("sent") == count)
        #expect(try fixture.messageCount(fixture.topology.deadLetterQueue) == 0)
        #expect(during.contains("push_connector_oauth_requests_total{cause="), "no oauth metric")
        #expect(!during.contains("push_connector_projects_paused{reason=\"auth\"} 0")
                    || !during.contains("push_connector_projects_paused{reason=\"token\"} 0"), "no project paused")
    }
}
