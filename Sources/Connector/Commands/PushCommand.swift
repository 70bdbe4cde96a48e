import CLIKit
import ConfigurationFiles
import FCM
import PushCore
import PushWorker

/// `push-connector push`: composes and sends one message directly (no broker) and prints the
/// outcome — what an operator uses to test an App ID's credentials and options.
public struct PushCommand: Command {
    public static let spec = CommandSpec(
        name: "push", synopsis: "--config APPS.json --app-id ID (--token T | --topic NAME) [options]",
        about: """
        Composes one message exactly as the worker would (App ID defaults, extra options, a fresh
        mn_message_id) and sends it through FCM HTTP v1, then prints the outcome. Exit code 0 when
        FCM accepted it, 1 otherwise, 2 for bad input.
        """,
        options: [
            .value(.config, "FILE", "App ID file", .nonEmpty),
            .value(.appID, "ID", "the App ID to send as", setting: false),
            .value(.token, "T", "the registration token to send to", setting: false),
            .value(.topic, "NAME", "or the topic", setting: false),
            .value(.title, "TEXT", "notification title", setting: false),
            .value(.body, "TEXT", "notification body", setting: false),
            .value(.image, "URL", "notification image", setting: false),
            .repeatable(.data, "KEY=VALUE", "custom data (repeatable)", setting: false),
            .flag(.dataOnly, "a Data-only message (no notification fields)", setting: false),
            .flag(.validateOnly, "ask FCM to validate without delivering", setting: false),
            .flag(.json, "print the result as contract JSON", setting: false),
        ] + CommonOptions.fcmOptions)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) {
        _ = try arguments.required(.config, in: "push")
        _ = try arguments.required(.appID, in: "push")
        if (arguments[.token] == nil) == (arguments[.topic] == nil) {
            throw UsageError("push: give exactly one of --token or --topic")
        }
        if arguments.has(.dataOnly), [OptionKey.title, .body, .image].contains(where: { arguments[$0] != nil }) {
            throw UsageError("push: --data-only messages carry no --title, --body or --image")
        }
        self.arguments = arguments
    }

    /// The one-target job the options describe.
    func job(jobID: String) throws(UsageError) -> SendJob {
        var data: [String: String] = [:]
        for pair in arguments.all(.data) {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                throw UsageError("push: --data takes KEY=VALUE, got \"\(pair)\"")
            }
            data[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        let notification = arguments.has(.dataOnly) ? nil
            : NotificationContent(title: arguments[.title], body: arguments[.body], image: arguments[.image])
        let target: JobTarget = arguments[.token].map { .recipients([Recipient(token: $0)]) } ?? .topic(arguments[.topic]!)
        return SendJob(jobID: jobID, appID: arguments[.appID]!, messageType: arguments.has(.dataOnly) ? .data : .notification,
                       notification: notification, data: data, target: target, validateOnly: arguments.has(.validateOnly))
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let fcm = try CommonOptions.fcmConfiguration(arguments, context, command: "push")
        let registry = try AppConfigurationFile.load(arguments[.config]!)
        let now = Timestamp.now()
        let job = try job(jobID: "cli-push-\(Int(now.secondsSince1970 * 1000))")
        guard let app = registry[job.appID] else {
            throw CommandFailure("push: --app-id: unknown App ID \"\(job.appID)\" (known: \(registry.appIDs.joined(separator: ", ")))", exitCode: 2)
        }
        let composed: [CompositionOutcome]
        do { composed = try MessageComposer().compose(job, app: app) } catch {
            throw CommandFailure(error.issues.map { "push: \($0)" }.joined(separator: "\n"), exitCode: 2)
        }
        var delivered: [Int: DeliveryOutcome] = [:]
        if case .message(let message)? = composed.first {
            let client = FCMClient(configuration: fcm)
            defer { client.shutdown() }
            let sender = try FCMPushSender(client: client, registry: AppRegistry([app]), environment: context.environment)
            delivered[message.recipientIndex] = await sender.send(message.body, app: app)
        }
        var random = SystemRandomNumberGenerator()
        let plan = JobPlanner(policy: RetryPolicy(maxAttempts: 1)).plan(job: job, attempt: 1, composed: composed, delivered: delivered,
                                                                        firstFailedAt: nil, now: Timestamp.now(), random: &random)
        for result in plan.results { context.console.out(Self.describe(result, json: arguments.has(.json))) }
        for dead in plan.deadLetters { context.console.out("failed: \(dead.code.rawValue): \(dead.message)") }
        if plan.retry != nil { context.console.out("not sent: held back (project paused or over its rate); try again later") }
        let accepted = plan.results.contains { $0.outcome == .sent || $0.outcome == .validated }
        return accepted ? 0 : 1
    }

    static func describe(_ result: SendResult, json: Bool) -> String {
        if json { return result.encoded().encodedString() }
        var line = "\(result.outcome.rawValue) mn_message_id=\(result.mnMessageID)"
        if let name = result.fcmMessageName { line += " name=\(name)" }
        if let e = result.error { line += " error=\(e.code)" + (e.httpStatus.map { " http=\($0)" } ?? "") + " \"\(e.message)\"" }
        return line
    }
}
