import AMQP
import FoundationEssentials
import PushCore

/// `push-connector send`: publishes send jobs to the job exchange with publisher confirms.
public struct SendCommand: Command {
    public static let spec = CommandSpec(
        name: "send", synopsis: "[--config APPS.json] [options] JOB.json|JOBS.jsonl|- ...",
        about: """
        Publishes jobs to <prefix>.jobs with publisher confirms: a file holds one JSON job, or one job
        per line (JSON Lines); - reads standard input. Each job is checked against the send-job
        contract first (and, with --config, its App ID and composition); nothing is published if any
        job is invalid, unless --no-validate. Prints how many jobs were published and confirmed.
        """,
        options: CommonOptions.brokerOptions + [
            .value("--config", "FILE", "also check each job's App ID and composition against this App ID file", .nonEmpty),
            .flag("--no-validate", "publish the bodies as they are (for tests and chaos runs)", setting: false),
        ],
        positionals: 1...64)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    /// The job documents in a file: the whole file if it is one JSON document, else one per line.
    static func documents(in bytes: [UInt8]) -> [[UInt8]] {
        if (try? JSONValue.parse(bytes)) != nil { return [bytes] }
        return bytes.split(separator: UInt8(ascii: "\n")).map(Array.init).filter { line in
            line.contains { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }
        }
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let settings = try CommonOptions.brokerSettings(arguments, context, command: "send")
        let topology = try CommonOptions.topology(arguments, command: "send")
        let registry = try arguments.value("--config").map { path throws(CommandFailure) in try AppConfigurationFile.load(path) }
        var jobs: [[UInt8]] = []
        var problems: [String] = []
        for path in arguments.positionals {
            let documents = SendCommand.documents(in: try AppConfigurationFile.readFile(path, what: "job"))
            for (n, body) in documents.enumerated() {
                let place = documents.count > 1 ? "\(path):\(n + 1)" : path
                if !arguments.has("--no-validate") { problems += SendCommand.check(body, registry: registry).map { "\(place): \($0)" } }
                jobs.append(body)
            }
        }
        guard problems.isEmpty else { throw CommandFailure(problems.joined(separator: "\n") + "\nnothing was published", exitCode: 2) }
        let publisher: ConfirmingPublisher
        do {
            publisher = try await ConfirmingPublisher.connect(settings: settings)
        } catch {
            throw CommandFailure("cannot connect to \(settings.redactedURL): \(error)")
        }
        let properties = MessageProperties(contentType: "application/json", persistent: true)
        var confirmed = 0
        do {
            // A sliding window of confirms in flight: memory stays bounded for any file size.
            let window = 1000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, job) in jobs.enumerated() {
                    if n >= window {
                        try await group.next()
                        confirmed += 1
                    }
                    let body = Data(job)
                    group.addTask {
                        try await publisher.publish(exchange: topology.jobsExchange, routingKey: topology.jobsRoutingKey,
                                                    body: body, properties: properties)
                    }
                }
                for try await _ in group { confirmed += 1 }
            }
        } catch {
            await publisher.close()
            throw CommandFailure("published \(confirmed) of \(jobs.count) job(s) before an error: \(error)")
        }
        await publisher.close()
        context.console.out("published \(jobs.count) job(s) to \(topology.jobsExchange), all confirmed")
        return 0
    }

    /// The problems of one job body, as lines.
    static func check(_ body: [UInt8], registry: AppRegistry?) -> [String] {
        let job: SendJob
        do { job = try SendJob.decode(body) } catch { return error.issues.map(\.description) }
        guard let registry else { return [] }
        guard let app = registry[job.appID] else { return ["app_id: unknown App ID \"\(job.appID)\" [UNKNOWN_APP]"] }
        do {
            return try MessageComposer().compose(job, app: app).flatMap { outcome -> [String] in
                guard case .invalid(let index, _, let issues) = outcome else { return [] }
                return issues.map { "target \(index): \($0)" }
            }
        } catch {
            return error.issues.map(\.description)
        }
    }
}

