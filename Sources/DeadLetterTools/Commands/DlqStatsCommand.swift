import AMQP
import CLIKit
import PushCore

/// `push-connector dlq stats`: counts of the DLQ by code, App ID and age; oldest and newest.
/// `Queue` picks the jobs DLQ (`dlq …`) or the events DLQ (`events dlq …`).
public struct DeadLetterStatsCommand<Queue: DeadLetterQueueChoice>: Command {
    public static var spec: CommandSpec {
        CommandSpec(
        name: Queue.commandPrefix + " stats", synopsis: "[filters] [--json] [options]",
        about: """
        Counts the dead-lettered jobs of \(Queue.queueHelp) by push-error-code, by App ID and by age of
        the last failure (<1h, 1h-24h, 1d-7d, >7d), with the oldest and newest failure. Reads the whole
        queue without removing anything; the order of the queue is kept.
        """,
        options: [.flag(.json, "one JSON object instead of text", setting: false)] + DlqOptions.filterOptions(codes: Queue.knownCodes)
            + CommonOptions.connectionOptions)
    }

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let command = Self.spec.name
        let (settings, topology, filter, _) = try DlqOptions.selection(arguments, context, command: command)
        let json = arguments.has(.json)
        let now = Timestamp.now()
        var stats = DeadLetterStats(now: now)
        let pass = try DeadLetterQueuePass(settings: settings, queue: Queue.queue(topology), command: command)
        let progress = DlqProgress(label: "reading", total: pass.initialCount, quiet: json)
        do {
            try pass.run { delivery in
                progress.step()
                let entry = DeadLetterEntry(body: delivery.body, headers: delivery.properties.headers)
                if filter.matches(entry, now: now) { stats.add(entry) }
                return .keep
            }
        } catch {
            progress.finish()
            throw CommandFailure("\(command): reading \(Queue.queue(topology)) failed: \(error)")
        }
        progress.finish()
        if json {
            context.console.out(stats.json(queue: Queue.queue(topology)).encodedString(.compact))
        } else {
            stats.lines(queue: Queue.queue(topology)).forEach(context.console.out)
        }
        return 0
    }
}

/// `push-connector dlq stats`.
public typealias DlqStatsCommand = DeadLetterStatsCommand<JobsDeadLetters>
