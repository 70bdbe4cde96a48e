import BrokerHarness
import Foundation
import Testing
@testable import Connector

/// A command that cannot reach the broker says so once, naming the node, without a guess about a
/// broker it never reached ("wrong --prefix?"), and exits 1 (issue 51: the message came twice,
/// and `results` asked whether the prefix was wrong).
@Suite(.timeLimit(.minutes(1))) struct BrokerDownMessageTests {
    @Test(arguments: [["results"], ["dlq", "stats"], ["dlq", "list"], ["cancel", "list"], ["cancel", "--campaign", "C"],
                      ["send", "\(repositoryRoot)/examples/jobs/notification.json"]])
    func aBrokerThatRefusesIsNamedOnceWithoutAGuess(command: [String]) async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let (code, out, err) = await runCLI(command + ["--amqp-url", "amqp://guest:guest@127.0.0.1:\(refusing.port)/"])
        #expect(code == 1, "\(out) \(err)")
        #expect(err.components(separatedBy: "cannot connect to").count == 2, "\(err)")
        #expect(!err.contains("wrong --prefix") && !err.contains("declare the topology"), "\(err)")
        #expect(err.hasPrefix(command[0]) && !err.contains("\n"), "\(err)")
    }
}
