import Testing
@testable import AMQP

/// Values from a URL a person typed, or from the wire, never trap and never leak a password.
@Suite(.timeLimit(.minutes(1))) struct HostileInputTests {
    @Test(arguments: ["amqp://app:ab/cd@host/", "amqp://app:a?b@host:5672/v", "amqp://app:p@ss@host/"])
    func passwordWithReservedCharactersIsRedacted(url: String) {
        let redacted = AMQPSettings.redact(url)
        #expect(!redacted.contains("ab/cd") && !redacted.contains("a?b") && !redacted.contains("p@ss"), "\(redacted)")
        #expect(redacted.contains("***"))
    }

    @Test func urlWithoutSchemeSeparatorIsNotShown() {
        #expect(AMQPSettings.redact("amqp:/app:s3cr3t@host/") == "<unparseable AMQP URL>")
    }

    @Test func errorsForABadURLNeverCarryThePassword() {
        // The unencoded '/' cuts the URL: "app:ab" is read as host:port, and "ab" is no port.
        let error = #expect(throws: AMQPError.self) { try AMQPSettings(url: "amqp://app:ab/cd@host/") }
        #expect(error?.code == .invalidURL)
        #expect(error.map { !"\($0)".contains("ab/cd") && !"\($0)".contains("cd@") } == true, "\(String(describing: error))")
    }

    /// A raw comma in a password splits the URL into a "list" whose first piece reads
    /// `push:hunt` as host and port: the error names neither piece.
    @Test(arguments: ["amqp://push:hunt,er2@rabbit:5672/", "amqp://push:hunt,er2@rabbit:5672/,amqp://push:hunt,er2@r2/",
                      "amqps://push:hunt"])
    func aRawCommaInAPasswordIsRefusedWithoutQuotingIt(url: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPSettings(url: url) }
        #expect(error?.code == .invalidURL)
        #expect(error.map { !"\($0)".contains("hunt") && !"\($0)".contains("er2") } == true, "\(String(describing: error))")
    }

    @Test(arguments: [("amqp://h/?heartbeat=3000000000", "bad heartbeat"), ("amqp://[::1]:99999999999/", "bad port"),
                      ("amqp://[::1]:0/", "bad port")])
    func outOfRangeNumbersAreRefused(url: String, reason: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPSettings(url: url) }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
    }
}
