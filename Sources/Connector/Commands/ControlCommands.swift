import AMQP
import CLIKit
import DeadLetterTools
import FoundationEssentials
import PushCore
import PushWorker

/// What `cancel`, `pause` and `resume` share: writing a record to the fleet's control log (a
/// confirmed publish: once the command returns, every worker has it or will read it at start)
/// and reading the log back (`cancel list`).
enum ControlLog {
    /// `--for`'s grammar (30m, 12h, 7d, 1h30m), at most `Topology.longestControl`.
    static func duration(_ a: ParsedArguments, default text: String, command: String) throws(UsageError) -> Int64 {
        let given = a[.forDuration] ?? text
        guard let seconds = DeadLetterFilter.parseDuration(given), seconds <= Double(Topology.longestControl.components.seconds) else {
            throw UsageError("\(command): --for must be a duration such as 30m, 12h or 7d, at most 30d, got \"\(given)\"")
        }
        return Int64(seconds * 1000)
    }

    static func newID(_ kind: String) -> String {
        "\(kind)-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }

    /// Publishes `record` to the control log with a confirm.
    static func publish(_ record: ControlRecord, _ a: ParsedArguments, _ context: CommandContext, command: String) throws {
        let settings = try CommonOptions.brokerSettings(a, context, command: command)
        let topology = try CommonOptions.topology(a, command: command)
        do {
            let client = try AMQPChannelClient(settings: settings)
            defer { client.close() }
            try client.publishConfirmed(exchange: "", routingKey: topology.controlLog, body: Data(record.encoded),
                                        properties: MessageProperties(contentType: "application/json", persistent: true), mandatory: true)
        } catch {
            throw CommandFailure.broker(error, command: command, step: "cannot write to the control log \(topology.controlLog) on "
                + "\(settings.redactedURL) (declare the topology: push-connector topology declare)")
        }
    }

    /// `record` as every worker will read it, or why a worker would refuse it: an App ID, campaign
    /// or job id the job contract refuses; a reason over `ControlRecord.maxReasonCharacters` or
    /// with control characters (it reaches logs and terminals).
    static func checked(_ record: ControlRecord, command: String) throws(UsageError) -> ControlRecord {
        if let reason = record.reason {
            guard reason.count <= ControlRecord.maxReasonCharacters else {
                throw UsageError("\(command): --reason is \(reason.count) characters; at most \(ControlRecord.maxReasonCharacters)")
            }
            guard !reason.unicodeScalars.contains(where: PrintableText.isControl) else {
                throw UsageError("\(command): --reason holds control characters")
            }
        }
        do { return try ControlRecord.decode(record.encoded, now: record.at) } catch { throw UsageError("\(command): \(error)") }
    }

    /// Every record of the control log, applied in order (read until nothing came for 500 ms).
    static func book(_ a: ParsedArguments, _ context: CommandContext, command: String) async throws -> ControlBook {
        let settings = try CommonOptions.brokerSettings(a, context, command: command)
        let topology = try CommonOptions.topology(a, command: command)
        var book = ControlBook()
        do {
            let reader = try await StreamReader(settings: settings, stream: topology.controlLog, from: .first, prefetch: 100)
            while let delivery = try await reader.next(within: .milliseconds(500)) {
                let now = FleetControl.epochMillis()
                if let record = try? ControlRecord.decode(delivery.body, now: now) { book.apply(record, now: now) }
            }
            await reader.close()
        } catch {
            throw CommandFailure.broker(error, command: command, step: "cannot read the control log \(topology.controlLog) on \(settings.redactedURL)")
        }
        return book
    }

    static let options: [OptionSpec] = CommonOptions.connectionOptions
}

/// `push-connector cancel`: stops a campaign (of every App ID, or of one) or one job, on every
/// worker, within a second; the recipients not yet sent get the outcome `cancelled`.
public struct CancelCommand: Command {
    public static let spec = CommandSpec(
        name: "cancel", synopsis: "--campaign C [--app-id A] | --job-id J [--reason TEXT] [--for DURATION] [options]",
        about: """
        Cancels a campaign (every App ID's, or --app-id's) or one job on every worker: each
        recipient not yet sent gets one result with the outcome `cancelled` (code CANCELLED) and
        is never sent, including its jobs still queued, in a retry tier or replayed from the DLQ
        later. Sends already in flight finish. Written to the fleet's control log: workers started
        later know it too. It ends after --for (default 7d, at most 30d) or with `cancel lift ID`.
        Prints the cancel's id.
        """,
        options: [
            .value(.campaign, "C", "the campaign to cancel", .nonEmpty, setting: false),
            .value(.appID, "A", "only this App ID's jobs of the campaign", .nonEmpty, setting: false),
            .value(.jobID, "J", "the job to cancel", .nonEmpty, setting: false),
            .value(.reason, "TEXT", "why, carried in every cancelled result", .nonEmpty, setting: false),
            .value(.forDuration, "DURATION", "how long it lasts (30m, 12h, 7d)", default: "7d", setting: false),
        ] + ControlLog.options)

    let arguments: ParsedArguments
    let record: ControlRecord
    public init(_ arguments: ParsedArguments) throws(UsageError) {
        self.arguments = arguments
        let campaign = arguments[.campaign], jobID = arguments[.jobID]
        guard (campaign == nil) != (jobID == nil) else { throw UsageError("cancel: give --campaign or --job-id (one of them)") }
        let now = FleetControl.epochMillis()
        record = try ControlLog.checked(ControlRecord(id: ControlLog.newID("cancel"), kind: .cancel, campaign: campaign, appID: arguments[.appID],
                                                      jobID: jobID, reason: arguments[.reason], at: now,
                                                      until: now + (try ControlLog.duration(arguments, default: "7d", command: "cancel"))),
                                        command: "cancel")
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        try ControlLog.publish(record, arguments, context, command: "cancel")
        context.console.out(record.summary)
        return 0
    }
}

/// `push-connector cancel list`: the cancels and pauses in force.
public struct CancelListCommand: Command {
    public static let spec = CommandSpec(
        name: "cancel list", synopsis: "[options]",
        about: "Prints the cancels and App ID pauses in force, oldest first: id, what, until when, why.",
        options: ControlLog.options)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let active = try await ControlLog.book(arguments, context, command: "cancel list").active(now: FleetControl.epochMillis())
        for record in active { context.console.out(record.summary) }
        if active.isEmpty { context.console.err("cancel list: nothing cancelled or paused") }
        return 0
    }
}

/// `push-connector cancel lift ID`: ends a cancel (or a pause) before its time.
public struct CancelLiftCommand: Command {
    public static let spec = CommandSpec(
        name: "cancel lift", synopsis: "ID [options]",
        about: "Ends the cancel or pause ID (see cancel list) on every worker; jobs not yet cancelled are sent again normally.",
        options: ControlLog.options, positionals: 1...1)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let id = arguments.positionals[0]
        let book = try await ControlLog.book(arguments, context, command: "cancel lift")
        guard book.active(now: FleetControl.epochMillis()).contains(where: { $0.id == id }) else {
            throw CommandFailure("cancel lift: no cancel or pause \(id) in force (see push-connector cancel list)")
        }
        let now = FleetControl.epochMillis()
        try ControlLog.publish(ControlRecord(id: ControlLog.newID("lift"), kind: .lift, target: id, at: now, until: now),
                               arguments, context, command: "cancel lift")
        context.console.out("lifted \(id)")
        return 0
    }
}

/// `push-connector pause`: holds an App ID's jobs on every worker (not sent, not dead-lettered,
/// no attempt counted) until `resume` or the end of `--for`.
public struct PauseCommand: Command {
    public static let spec = CommandSpec(
        name: "pause", synopsis: "--app-id A [--for DURATION] [--reason TEXT] [options]",
        about: """
        Pauses an App ID on every worker, durably: its jobs are neither sent nor dead-lettered nor
        counted as attempts; they wait in a retry tier (looked at again every 30 s at most) so that
        they hold no window or prefetch room from the other App IDs. Ends with `resume --app-id A`
        or after --for (default 7d, at most 30d). Prints the pause's id.
        """,
        options: [
            .value(.appID, "A", "the App ID to pause", .nonEmpty, setting: false),
            .value(.reason, "TEXT", "why (shown by cancel list and in the workers' log)", .nonEmpty, setting: false),
            .value(.forDuration, "DURATION", "how long it lasts (30m, 12h, 7d)", default: "7d", setting: false),
        ] + ControlLog.options)

    let arguments: ParsedArguments
    let record: ControlRecord
    public init(_ arguments: ParsedArguments) throws(UsageError) {
        self.arguments = arguments
        let app = try arguments.required(.appID, in: "pause")
        let now = FleetControl.epochMillis()
        record = try ControlLog.checked(ControlRecord(id: ControlLog.newID("pause"), kind: .pause, appID: app, reason: arguments[.reason], at: now,
                                                      until: now + (try ControlLog.duration(arguments, default: "7d", command: "pause"))),
                                        command: "pause")
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        try ControlLog.publish(record, arguments, context, command: "pause")
        context.console.out(record.summary)
        return 0
    }
}

/// `push-connector resume`: ends every pause of an App ID.
public struct ResumeCommand: Command {
    public static let spec = CommandSpec(
        name: "resume", synopsis: "--app-id A [options]",
        about: "Ends every pause of the App ID on every worker; its waiting jobs are sent as they come back from their retry tier (30 s at most).",
        options: [.value(.appID, "A", "the App ID to resume", .nonEmpty, setting: false)] + ControlLog.options)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let app = try arguments.required(.appID, in: "resume")
        let now = FleetControl.epochMillis()
        try ControlLog.publish(ControlRecord(id: ControlLog.newID("resume"), kind: .resume, appID: app, at: now, until: now),
                               arguments, context, command: "resume")
        context.console.out("resumed \(app)")
        return 0
    }
}
