import Foundation
import PushCore
import Testing
@testable import Connector

/// The reference clients of examples/ (a publisher and a results reader, in Python with pika and
/// in Go with Debian's amqp091-go), run against the real broker, worker and emulator:
/// what an integrator copies works. Fails, never skips, when pika or Go is missing.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ReferenceClientsTests {
    @Test(arguments: ["python", "go"])
    func thePublisherAndTheResultsReaderWorkAgainstTheWorker(language: String) async throws {
        let f = try await PipelineFixture()
        let worker = try WorkerProcess(f, ["--log-level", "warn"])  // the binary: both lanes, the urgent one too
        defer { _ = worker }
        let directory = try temporaryDirectory()
        let jobs = directory + "/jobs.jsonl"
        try [jobJSON("ref-1", tokens: ["dev-a", "unregistered-b"], extra: #","campaign":"C1""#),
             jobJSON("ref-2", tokens: ["dev-c"], extra: #","campaign":"C1""#),
             jobJSON("ref-otp", tokens: ["dev-d"], extra: #","campaign":"OTP","priority":"high""#)]
            .joined(separator: "\n").write(toFile: jobs, atomically: true, encoding: .utf8)
        let (publisher, reader) = try clients(language, in: directory)
        let common = language == "go" ? ["-prefix", f.topology.prefix] : ["--prefix", f.topology.prefix]
        func option(_ name: String) -> String { language == "go" ? "-" + name : "--" + name }

        // Options first: Go's flag package stops at the first argument that is not one.
        var (code, out) = try runTool(publisher.tool, publisher.arguments + common + [f.vhostURL, jobs])
        #expect(code == 0 && out.contains(#"{"published": 3}"#), "\(out)")
        let offsets = directory + "/offset"
        (code, out) = try runTool(reader.tool, reader.arguments + common
            + [option("offset-file"), offsets, option("until"), "4", option("idle"), language == "go" ? "20s" : "20", f.vhostURL])
        #expect(code == 0, "\(out)")
        let summary = try JSONValue.parse(Array(out.utf8))
        #expect(summary["recipients"] == 4 && summary["prune"] == ["unregistered-b"], "\(out)")
        #expect(summary["campaigns"]?["C1"] == ["sent": 2, "invalid_token": 1] && summary["campaigns"]?["OTP"] == ["sent": 1], "\(out)")

        // From the stored offset on, nothing new: each result is read once across restarts.
        (code, out) = try runTool(reader.tool, reader.arguments + common
            + [option("offset-file"), offsets, option("idle"), language == "go" ? "2s" : "2", f.vhostURL])
        let again = try JSONValue.parse(Array(out.utf8))
        #expect(code == 0 && again["results"] == 0, "\(out)")

        // A prefix with no exchange: the publisher fails; it does not report the job published.
        (code, out) = try runTool(publisher.tool, publisher.arguments + [option("prefix"), "nope", f.vhostURL, jobs])
        #expect(code != 0 && !out.contains("published"), "\(out)")
        _ = try await worker.terminate(within: .seconds(15))
    }

    /// The command that runs each client: the Python scripts as they are, the Go programs built
    /// here from examples/go in GOPATH mode against Debian's golang-github-rabbitmq-amqp091-go-dev.
    private func clients(_ language: String, in directory: String) throws -> (publisher: (tool: String, arguments: [String]),
                                                                                 reader: (tool: String, arguments: [String])) {
        let examples = repositoryRoot + "/examples/" + language
        guard language == "go" else {
            return (("python3", [examples + "/publisher.py"]), ("python3", [examples + "/results_consumer.py"]))
        }
        let environment = ["GO111MODULE": "off", "GOPATH": "/usr/share/gocode", "GOCACHE": directory + "/gocache"]
        for program in ["publisher", "results"] {
            let (code, out) = try runTool("go", ["build", "-o", directory + "/" + program, "./" + program], environment: environment,
                                          directory: examples)
            guard code == 0 else { throw FixtureError("go build \(program): \(out)") }
        }
        return ((directory + "/publisher", []), (directory + "/results", []))
    }
}
