import AMQP
import CLIKit
import ConfigurationFiles
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
        A job whose "priority" is "high" goes with the routing key job.high to the urgent queue
        <prefix>.jobs.high, the others with job; --priority sets the field of every job.
        """,
        options: CommonOptions.connectionOptions + [
            .value(.config, "FILE", "also check each job's App ID and composition against this App ID file", .nonEmpty),
            .flag(.noValidate, "publish the bodies as they are (for tests and chaos runs)", setting: false),
            .value(.priority, "PRIORITY", "normal or high: set every job's \"priority\" (high: routing key job.high, the\n"
                + "urgent queue); without it each job goes by its own field", setting: false),
        ],
        positionals: 1...64)

    let arguments: ParsedArguments
    let priority: JobPriority?
    public init(_ arguments: ParsedArguments) throws(UsageError) {
        self.arguments = arguments
        if let text = arguments[.priority] {
            guard let value = JobPriority(rawValue: text) else { throw UsageError("send: --priority must be normal or high, got \"\(text)\"") }
            priority = value
        } else {
            priority = nil
        }
    }

    /// `body` with its `"priority"` set to `priority` (when given), and whether it goes to the
    /// urgent queue; nil when a priority is to be set and `body` is not a JSON object.
    static func prioritized(_ body: [UInt8], _ priority: JobPriority?) -> (body: [UInt8], urgent: Bool)? {
        guard let priority else {
            let urgent = (try? JSONValue.parse(body))?["priority"]?.stringValue == JobPriority.high.rawValue
            return (body, urgent)
        }
        guard case .object(var fields)? = try? JSONValue.parse(body) else { return nil }
        fields["priority"] = .string(priority.rawValue)
        return (JSONValue.object(fields).encodedBytes(), priority == .high)
    }

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
        let registry = try arguments[.config].map { path throws(ConfigurationError) in try AppConfigurationFile.load(path) }
        var jobs: [(body: [UInt8], urgent: Bool)] = []
        var problems: [String] = []
        for path in arguments.positionals {
            let documents = SendCommand.documents(in: try AppConfigurationFile.readFile(path, what: "job"))
            for (n, document) in documents.enumerated() {
                let place = documents.count > 1 ? "\(path):\(n + 1)" : path
                guard let (body, urgent) = SendCommand.prioritized(document, priority) else {
                    problems.append("\(place): not a JSON object: --priority cannot be set")
                    continue
                }
                if !arguments.has(.noValidate) { problems += SendCommand.check(body, registry: registry).map { "\(place): \($0)" } }
                jobs.append((body, urgent))
            }
        }
        guard problems.isEmpty else { throw CommandFailure(problems.joined(separator: "\n") + "\nnothing was published", exitCode: 2) }
        let publisher: ConfirmingPublisher
        do {
            publisher = try await ConfirmingPublisher.connect(settings: settings)
        } catch {
            throw CommandFailure.broker(error, command: "send", step: "cannot connect to \(settings.redactedURL)")
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
                    let body = Data(job.body)
                    let routingKey = topology.jobsRoutingKey(urgent: job.urgent)
                    group.addTask {
                        try await publisher.publish(exchange: topology.jobsExchange, routingKey: routingKey,
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
        let urgent = jobs.count { $0.urgent }
        context.console.out("published \(jobs.count) job(s) to \(topology.jobsExchange)" + (urgent > 0 ? " (\(urgent) high priority)" : "")
            + ", all confirmed")
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

