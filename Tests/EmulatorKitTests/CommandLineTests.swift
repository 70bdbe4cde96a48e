import Testing
@testable import EmulatorKit

@Suite(.timeLimit(.minutes(1))) struct CommandLineTests {
    @Test func flagsBecomeAConfiguration() throws {
        let command = try EmulatorCommandLine.parse([
            "--listen", "127.0.0.1:0", "--no-auth", "--latency", "5-20", "--error-rate", "unavailable=0.1",
            "--quota-per-minute", "100", "--goaway-every", "1000", "--record", "50", "--service-account", "a.json",
            "--token-lifetime", "60", "--latency-share", "0.1",
        ])
        guard case .serve(let c) = command else { Issue.record("not serve: \(command)"); return }
        #expect(c.port == 0)
        #expect(!c.requireAuth)
        #expect(c.latency == .uniform(min: .milliseconds(5), max: .milliseconds(20)))
        #expect(c.latencyShare == 0.1)
        #expect(c.errorRates == [.unavailable: 0.1])
        #expect(c.quotaPerMinute == 100)
        #expect(c.goawayEveryRequests == 1000)
        #expect(c.recordCapacity == 50)
        #expect(c.serviceAccountFiles == ["a.json"])
        #expect(c.accessTokenLifetime == .seconds(60))
    }

    @Test func unknownFlagIsAUsageError() {
        #expect(throws: UsageError.self) { try EmulatorCommandLine.parse(["--bogus"]) }
        #expect(throws: UsageError.self) { try EmulatorCommandLine.parse(["--error-rate", "nope=2"]) }
        #expect(throws: UsageError.self) { try EmulatorCommandLine.parse(["--tls-cert", "x.pem"]) }
        #expect(throws: UsageError.self) { try EmulatorCommandLine.parse(["--latency-share", "1.5"]) }
    }

    @Test func makeServiceAccountNeedsProjectTokenURIAndOut() throws {
        #expect(throws: UsageError.self) { try EmulatorCommandLine.parse(["make-service-account", "--project", "p"]) }
        let command = try EmulatorCommandLine.parse(["make-service-account", "--project", "p", "--token-uri", "http://x/token", "--out", "f.json"])
        #expect(command == .makeServiceAccount(project: "p", email: "fcm-emulator@p.iam.gserviceaccount.com", tokenURI: "http://x/token", output: "f.json"))
    }
}
