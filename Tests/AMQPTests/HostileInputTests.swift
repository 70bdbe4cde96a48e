import Testing
@testable import AMQP

/// Values from a URL a person typed, or from the wire, never trap and never leak a password.
@Suite struct HostileInputTests {
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
        do {
            _ = try AMQPSettings(url: "amqp://app:ab/cd@host/")
        } catch {
            #expect(!"\(error)".contains("ab/cd"))
        }
    }

    @Test(arguments: ["amqp://h/?heartbeat=3000000000", "amqp://[::1]:99999999999/", "amqp://[::1]:0/"])
    func outOfRangeNumbersAreRefused(url: String) {
        #expect(throws: AMQPError.self) { try AMQPSettings(url: url) }
    }
}
