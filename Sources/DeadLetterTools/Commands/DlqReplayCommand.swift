import AMQP
import CLIKit
import FoundationEssentials
import OSThread
import PushCore

/// `push-connector dlq replay`: moves matching dead-lettered jobs back to the job exchange with up
/// to `--window` publishes in flight, each DLQ copy acked after its confirm, so that a replay
/// killed at any instant loses nothing and duplicates at most the window.
/// `Queue` picks the jobs DLQ (`dlq …`) or the events DLQ (`events dlq …`).
public struct DeadLetterReplayCommand<Queue: DeadLetterQueueChoice>: Command {
    public static var spec: CommandSpec {
        CommandSpec(
        name: Queue.commandPrefix + " replay", synopsis: "[filters] [--limit N] [--rate N/s] [--window N] [--dry-run] [--to EXCHANGE/KEY] [options]",
        about: """
        Moves the matching messages of \(Queue.queueHelp) back to \(Queue.replayHelp), in DLQ
        order, with up to --window publishes in flight: each job is removed from the DLQ
        once the broker confirmed it. Killed at any instant it loses nothing; at most the window of
        jobs in flight is then in both queues. Run it again to finish. Non-matching jobs stay in the
        DLQ, in order.

        The replayed copy has the same body and properties; push-replays goes up by one, push-attempt
        and the other push-* failure headers are removed (the attempt count and the retry age limit
        restart), and so are RabbitMQ's x-* headers. A job already replayed --max-replays times is
        refused (it stays in the DLQ and is reported) unless --force.
        """,
        options: [
            DlqOptions.limit("replay at most N jobs"),
            .value(.rate, "N", "at most N jobs per second (e.g. 50 or 50/s; default: as fast as confirms come)",
                   ValueKind { DlqOptions.rate($0) == nil ? "must be messages per second from 0.1 to 100000 (e.g. 50 or 50/s)" : nil }),
            DlqOptions.windowOption("publishes in flight at most, and so jobs a kill may duplicate"),
            .flag(.dryRun, "report what would be replayed; change nothing", setting: false),
            .value(.to, "EXCHANGE/KEY", "publish there instead (text before the first / is the exchange; an empty\n"
                + "exchange, \"/queue\", is the default exchange); it must route to a queue", setting: false),
            .value(.maxReplays, "N", "refuse jobs already replayed N times", default: "5", .integer(0...1_000_000)),
            .flag(.force, "replay even those", setting: false),
            .flag(.json, "print the summary as one JSON object, no progress", setting: false),
        ] + DlqOptions.filterOptions(codes: Queue.knownCodes) + CommonOptions.connectionOptions,
        footer: "Exit status: 0 when every matching job was replayed, 1 when some were refused or failed.")
    }

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let command = Self.spec.name
        let (settings, topology, filter, limit) = try DlqOptions.selection(arguments, context, command: command)
        let rate = try DlqOptions.rate(arguments, command: command)
        let policy = ReplayPolicy(maxReplays: arguments.integer(.maxReplays),
                                  force: arguments.has(.force))
        var fixed: (exchange: String, routingKey: String)?
        if let to = arguments[.to] {
            guard let slash = to.firstIndex(of: "/") else {
                throw UsageError("\(command): --to must be EXCHANGE/ROUTING-KEY (e.g. push.jobs/job), got \"\(to)\"")
            }
            fixed = (String(to[..<slash]), String(to[to.index(after: slash)...]))
        }
        let dryRun = arguments.has(.dryRun), json = arguments.has(.json)
        let now = Timestamp.now()

        let window = try DlqOptions.window(arguments, command: command)
        let pass = try DeadLetterQueuePass(settings: settings, queue: Queue.queue(topology), command: command,
                                           window: dryRun ? DeadLetterQueuePass.readingWindow : window)
        let progress = DlqProgress(label: dryRun ? "checking" : "replaying", total: pass.initialCount, quiet: json)
        var picked = 0, refused = 0, read = 0, matching = 0
        var refusedLines: [String] = []
        var failure: String?
        let started = Date()
        do {
            try pass.run { delivery in
                progress.step()
                read += 1
                let entry = DeadLetterEntry(body: delivery.body, headers: delivery.properties.headers)
                guard picked < limit, filter.matches(entry, now: now) else { return .keep }
                matching += 1
                if let refusal = policy.refusal(entry) {
                    refused += 1
                    if refusedLines.count < 20 {
                        refusedLines.append("\(command): refused job \(entry.jobID ?? "(no job id)"): \(refusal)")
                    }
                    return .keep
                }
                picked += 1
                if dryRun { return .keep }
                if let rate {
                    let due = started.addingTimeInterval(Double(picked - 1) / rate).timeIntervalSinceNow
                    if due > 0 { OSThread.sleep(seconds: due) }
                }
                let (exchange, routingKey) = fixed ?? Queue.replayDestination(topology, headers: delivery.properties.headers)
                var properties = ReplayPolicy.replayProperties(delivery.properties, replays: entry.replays)
                properties.persistent = true
                return .move(exchange: exchange, routingKey: routingKey, body: delivery.body, properties: properties)
            }
        } catch {
            failure = "\(error)"
        }
        let replayed = dryRun ? picked : pass.removed
        progress.finish()
        refusedLines.forEach(context.console.err)
        if refused > refusedLines.count { context.console.err("\(command): … and \(refused - refusedLines.count) more refused") }
        let seconds = Date().timeIntervalSince(started)
        let target = fixed.map { $0.exchange.isEmpty ? "(default exchange)/\($0.routingKey)" : "\($0.exchange)/\($0.routingKey)" }
            ?? Queue.replayTarget(topology)
        if json {
            var summary: [String: JSONValue] = [
                "dry_run": .bool(dryRun), "replayed": .int(Int64(replayed)), "refused": .int(Int64(refused)),
                "matching": .int(Int64(matching)), "read": .int(Int64(read)), "to": .string(target),
                "seconds": .double((seconds * 1000).rounded() / 1000),
            ]
            if let failure { summary["error"] = .string(failure) }
            context.console.out(JSONValue.object(summary).encodedString(.compact))
        } else {
            context.console.out((dryRun ? "would replay" : "replayed") + " \(replayed) \(Queue.items) to \(target), \(refused) refused, "
                + "\(read) read from \(Queue.queue(topology))"
                + String(printf: " in %.1f s (%.0f/s)", seconds, seconds > 0 ? Double(replayed) / seconds : 0))
        }
        if let failure {
            throw CommandFailure("\(command): stopped after \(replayed) replayed \(Queue.items): \(failure); "
                + "the jobs in flight (at most \(window)) stayed in the DLQ (they may also have reached \(target)); run the replay again to finish")
        }
        return refused > 0 ? 1 : 0
    }
}

/// `push-connector dlq replay`.
public typealias DlqReplayCommand = DeadLetterReplayCommand<JobsDeadLetters>
