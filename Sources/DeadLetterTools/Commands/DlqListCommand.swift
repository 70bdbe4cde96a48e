import AMQP
import CLIKit
import PushCore

/// `push-connector dlq list`: one line per dead-lettered job, without removing anything.
/// `Queue` picks the jobs DLQ (`dlq …`) or the events DLQ (`events dlq …`).
public struct DeadLetterListCommand<Queue: DeadLetterQueueChoice>: Command {
    public static var spec: CommandSpec {
        CommandSpec(
        name: Queue.commandPrefix + " list", synopsis: "[--limit N] [filters] [--json] [options]",
        about: """
        Lists the dead-lettered jobs of \(Queue.queueHelp) in queue order, one line each: job id, App ID,
        code, attempts, replays, first and last failure, recipients. Nothing is removed and the order
        of the queue is kept (the whole queue is read even with --limit: RabbitMQ puts requeued
        messages at the back of a quorum queue, so every message must go round once).
        """,
        options: [
            DlqOptions.limit("show at most N jobs (default: all)"),
            .flag(.json, "one JSON object per line (JSON Lines), no header or summary", setting: false),
        ] + DlqOptions.filterOptions(codes: Queue.knownCodes) + CommonOptions.connectionOptions)
    }

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let command = Self.spec.name
        let (settings, topology, filter, limit) = try DlqOptions.selection(arguments, context, command: command)
        let json = arguments.has(.json)
        let now = Timestamp.now()
        var shown = 0, matching = 0, total = 0
        let pass = try DeadLetterQueuePass(settings: settings, queue: Queue.queue(topology), command: command)
        let progress = DlqProgress(label: "reading", total: pass.initialCount, quiet: json)
        if !json { context.console.out(DlqOptions.listHeader) }
        do {
            try pass.run { delivery in
                progress.step()
                total += 1
                let entry = DeadLetterEntry(body: delivery.body, headers: delivery.properties.headers)
                guard filter.matches(entry, now: now) else { return .keep }
                matching += 1
                if shown < limit {
                    shown += 1
                    context.console.out(json ? DlqOptions.json(entry).encodedString(.compact) : DlqOptions.row(entry))
                }
                return .keep
            }
        } catch {
            progress.finish()
            throw CommandFailure("\(command): reading \(Queue.queue(topology)) failed: \(error)")
        }
        progress.finish()
        if !json { context.console.out("\(shown) shown, \(matching) matching, \(total) in \(Queue.queue(topology))") }
        return 0
    }
}

/// `push-connector dlq list`.
public typealias DlqListCommand = DeadLetterListCommand<JobsDeadLetters>
