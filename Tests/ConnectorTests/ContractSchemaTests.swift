import AMQP
@testable import DeadLetterTools
import Foundation
import PushCore
@testable import PushEvents
import Testing
@testable import Connector

/// The contracts as files (`contracts/`: JSON Schema 2020-12, AsyncAPI 3.0, OpenAPI 3.1), held to
/// the binary both ways: what the docs show and what the worker writes validates, and the
/// binary refuses every document of the bad corpus that the schemas refuse, naming the same
/// field. The schema side runs `contracts/check.py` (Python `jsonschema`; fails, never skips,
/// when it is missing).
@Suite(.serialized, .timeLimit(.minutes(3))) struct ContractSchemaTests {
    @Test func theSchemasAreValidAndEveryExampleInTheDocsAndExamplesValidates() throws {
        var (code, out) = try contractCheck(["schemas"])
        #expect(code == 0 && out.contains("10 of 10 schemas valid"), "\(out)")
        (code, out) = try contractCheck(["docs"])
        #expect(code == 0 && out.contains("0 problem(s)"), "\(out)")
    }

    @Test func theAsyncAPIAndOpenAPIDocumentsNameTheTopologyTheBinaryDeclares() async throws {
        let directory = try temporaryDirectory()
        let (code, definitions, err) = await runCLI(["topology", "definitions"])
        #expect(code == 0, "\(err)")
        try definitions.write(toFile: directory + "/definitions.json", atomically: true, encoding: .utf8)
        let (checked, out) = try contractCheck(["apis", directory + "/definitions.json"])
        #expect(checked == 0 && out.contains("0 problem(s)"), "\(out)")
    }

    /// `contracts/bad/*.jsonl`: each line a bad document and the field at fault. The schema
    /// refuses it there (`check.py corpus`); so does the binary: `compose` for jobs, `config
    /// check` for App ID files, the events endpoint's decoder for events and batches.
    @Test func theBinaryRefusesEveryBadDocumentOfTheCorpusNamingTheFieldTheSchemaNames() async throws {
        let (code, out) = try contractCheck(["corpus"])
        #expect(code == 0 && out.contains("refused at the expected field"), "\(out)")

        let folder = try AppFolder()
        var refused = 0
        for (schema, field, document, label) in try Self.corpus() {
            let file = try folder.write("bad.json", document.encodedString())
            let said: String
            switch schema {
            case "send-job":
                let (code, out, err) = await runCLI(["compose", "--config", "\(repositoryRoot)/examples/apps.json", file])
                #expect(code == 2, "\(label): compose accepted it")
                said = out + err
            case "apps":
                let (code, out, err) = await runCLI(["config", "check", file])
                #expect(code == 2, "\(label): config check accepted it")
                said = out + err
            case "event", "events-batch":
                // A batch keeps its good events: a bad one is refused by index, in `rejected`.
                switch EventRequestBody.read(document.encodedBytes(), batch: schema == "events-batch", knownApps: nil) {
                case .success(let body) where body.rejected.isEmpty: said = ""; Issue.record("\(label): the events endpoint accepted it")
                case .success(let body): said = body.issues.map { "\($0.field): \($0.message)" }.joined(separator: "\n")
                case .failure(let error): said = error.issues.map { "\($0.field): \($0.message)" }.joined(separator: "\n")
                }
            default:
                said = ""
                Issue.record("\(label): no binary check for schema \(schema)")
            }
            #expect(said.contains("\(field): ") || said.hasPrefix("\(field):"), "\(label): the binary did not name \(field): \(said)")
            refused += 1
        }
        #expect(refused >= 40, "the corpus holds \(refused) documents")
    }

    /// Results of every outcome the worker writes here (sent, validated, invalid_token,
    /// rejected, expired, dead_lettered), its dead letters and a `dlq export` of them validate,
    /// and results carry no field the schema does not declare.
    @Test func whatTheWorkerWritesValidatesAgainstTheResultAndDeadLetterSchemas() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        try await f.publish([
            jobJSON("c-sent", tokens: ["dev-1"], extra: #","campaign":"C","schema_version":1"#),
            jobJSON("c-validated", tokens: ["dev-2"], extra: #","validate_only":true"#),
            jobJSON("c-invalid", tokens: ["unregistered-3"]),
            jobJSON("c-rejected", tokens: [""]),
            jobJSON("c-expired", tokens: ["dev-4"], extra: #","not_after":"2020-01-01T00:00:00Z""#),
            jobJSON("c-dead", tokens: ["dev-5", "dev-6"], app: "shop-ios", extra: #","priority":"high""#),
        ])
        try await f.publishBytes(Data("not a job".utf8))
        let results = try await f.resultsTap.take(7, timeout: .seconds(30))
        try await f.waitForCount(f.topology.deadLetterQueue, 2)
        shutdown.trigger()
        await task.value

        let directory = try temporaryDirectory()
        let resultsFile = directory + "/results.jsonl"
        try results.map { String(decoding: $0.body, as: UTF8.self) }.joined(separator: "\n").write(toFile: resultsFile, atomically: true, encoding: .utf8)
        let outcomes = Set(try results.map { try SendResult.decode(JSONValue.parse($0.body)).outcome })
        #expect(outcomes == [.sent, .validated, .invalidToken, .rejected, .expired, .deadLettered])
        var (code, out) = try contractCheck(["validate", "result", resultsFile])
        #expect(code == 0, "\(out)")
        (code, out) = try contractCheck(["fields", "result", resultsFile])
        #expect(code == 0, "a result field the schema does not declare: \(out)")

        let exportFile = directory + "/dlq.jsonl"
        let (exported, _, err) = await runCLI(["dlq", "export", exportFile] + f.cliBroker)
        #expect(exported == 0, "\(err)")
        (code, out) = try contractCheck(["validate", "dlq-export-line", exportFile])
        #expect(code == 0 && out.contains("2 document(s)"), "\(out)")
        let records = try String(contentsOfFile: exportFile, encoding: .utf8).split(separator: "\n")
            .map { try DeadLetterRecord.decode(line: Array($0.utf8)) }
        let headersFile = directory + "/headers.jsonl", bodiesFile = directory + "/bodies.jsonl"
        try records.map { JSONValue.object($0.properties.headers.compactMapValues(Self.plain)).encodedString() }
            .joined(separator: "\n").write(toFile: headersFile, atomically: true, encoding: .utf8)
        let jobs = records.filter { (try? JSONValue.parse($0.body)) != nil }.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(jobs.count == 1, "the UNKNOWN_APP job is JSON, the undecodable body is not")
        try jobs.joined(separator: "\n").write(toFile: bodiesFile, atomically: true, encoding: .utf8)
        (code, out) = try contractCheck(["validate", "dead-letter-headers", headersFile])
        #expect(code == 0 && out.contains("2 document(s)"), "\(out)")
        (code, out) = try contractCheck(["validate", "send-job", bodiesFile])
        #expect(code == 0, "a dead-lettered job that its own schema refuses: \(out)")
    }

    /// `compose` prints what the worker sends: token, topic and condition targets, a data-only
    /// job asking FCM to validate only, the App ID's four option sections deep-merged with the job's; each request body
    /// validates against `fcm-request.schema.json` (names FCM knows, one target, string data,
    /// the tracking id), and declares nothing the schema does not.
    @Test func composeOutputValidatesAgainstTheFCMRequestSchema() async throws {
        let directory = try temporaryDirectory()
        let apps = #"""
            {"apps": [{"app_id": "web-shop", "project_id": "shop-prod", "credentials_file": "sa.json",
              "default_payload": {"pushdata.source": "crm"},
              "extra_options": {
                "android": {"priority": "high", "ttl": "3600s", "collapse_key": "promo",
                            "notification": {"channel_id": "promo", "notification_count": 2, "sticky": false}},
                "apns": {"headers": {"apns-priority": "10"}, "payload": {"aps": {"sound": "default", "badge": 1}},
                         "fcm_options": {"image": "https://example.com/i.png"}},
                "webpush": {"headers": {"Urgency": "high"}, "fcm_options": {"link": "https://example.com/p"},
                            "notification": {"requireInteraction": true}},
                "fcm_options": {"analytics_label": "promo"}}}]}
            """#
        try apps.write(toFile: directory + "/apps.json", atomically: true, encoding: .utf8)
        let jobs = [
            #"{"job_id": "t", "app_id": "web-shop", "notification": {"title": "Hi", "body": "There", "image": "https://example.com/a.png"}, "#
                + #""data": {"pushdata.k": "v"}, "options": {"android": {"ttl": "60s"}, "webpush": {"data": {"w": "1"}}}, "#
                + #""recipients": [{"token": "dev-a", "data": {"pushdata.name": "Ada"}}, {"token": "dev-b", "mn_message_id": "mnid2m.1.2.3.4.5"}]}"#,
            #"{"job_id": "p", "app_id": "web-shop", "notification": {"title": "News"}, "topic": "news"}"#,
            #"{"job_id": "c", "app_id": "web-shop", "notification": {"title": "Both"}, "condition": "'a' in topics && 'b' in topics"}"#,
            #"{"job_id": "d", "app_id": "web-shop", "message_type": "data", "data": {"pushdata.a": "1"}, "recipients": [{"token": "dev-c"}], "#
                + #""validate_only": true}"#,
        ]
        var composed = ""
        for (index, job) in jobs.enumerated() {
            let file = directory + "/job\(index).json"
            try job.write(toFile: file, atomically: true, encoding: .utf8)
            let (code, out, err) = await runCLI(["compose", "--config", directory + "/apps.json", file])
            #expect(code == 0, "\(job): \(err)")
            composed += out + "\n"
        }
        let output = directory + "/composed.json"
        try composed.write(toFile: output, atomically: true, encoding: .utf8)
        var (code, out) = try contractCheck(["validate", "fcm-request", output])
        #expect(code == 0 && out.contains("5 document(s) checked against fcm-request: 0 problem(s)"), "\(out)")
        (code, out) = try contractCheck(["fields", "fcm-request", output])
        #expect(code == 0, "a field the schema does not declare: \(out)")
        #expect(composed.contains(#""topic" : "news""#) || composed.contains(#""topic": "news""#), "the topic target is composed")
        #expect(composed.contains(#""validate_only" : true"#) || composed.contains(#""validate_only": true"#), "validate_only is composed")
    }

    // MARK: helpers

    /// (schema, field, document, label) for every line of `contracts/bad/*.jsonl`.
    static func corpus() throws -> [(String, String, JSONValue, String)] {
        let folder = repositoryRoot + "/contracts/bad"
        var entries: [(String, String, JSONValue, String)] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder).sorted() where name.hasSuffix(".jsonl") {
            let lines = try String(contentsOfFile: folder + "/" + name, encoding: .utf8).split(separator: "\n")
            for (number, line) in lines.enumerated() {
                let entry = try JSONValue.parse(Array(line.utf8))
                guard let field = entry["field"]?.stringValue, let document = entry["document"] else {
                    throw FixtureError("\(name):\(number + 1): no field or document")
                }
                entries.append((String(name.dropLast(".jsonl".count)), field, document, "\(name):\(number + 1)"))
            }
        }
        return entries
    }

    /// An AMQP header as a client library hands it over (tables and arrays left out).
    static func plain(_ value: AMQPFieldValue) -> JSONValue? {
        switch value {
        case .string(let s): .string(s)
        case .int(let i): .int(i)
        case .bool(let b): .bool(b)
        case .double(let d): .double(d)
        default: nil
        }
    }
}

/// Runs `python3 contracts/check.py ARGUMENTS`: its exit code and everything it printed.
func contractCheck(_ arguments: [String]) throws -> (Int32, String) {
    try runPython(repositoryRoot + "/contracts/check.py", arguments)
}

/// Runs `python3 SCRIPT ARGUMENTS`: its exit code and everything it printed (stdout and stderr).
func runPython(_ script: String, _ arguments: [String]) throws -> (Int32, String) {
    try runTool("python3", [script] + arguments)
}

/// Runs `TOOL ARGUMENTS` found on PATH, or at a path (with `environment` added, `input` on its
/// standard input): its exit code and everything it printed (stdout and stderr together).
func runTool(_ tool: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
             input: String? = nil) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let pipe = Pipe(), stdin = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    if input != nil { process.standardInput = stdin }
    try process.run()
    if let input {
        try stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
        try stdin.fileHandleForWriting.close()
    }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}
