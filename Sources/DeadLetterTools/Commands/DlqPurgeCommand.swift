import AMQP
import CLIKit
import FoundationEssentials
import PushCore

/// `push-connector dlq purge --yes`: deletes dead-lettered jobs for good (all, or the matching ones).
/// `Queue` picks the jobs DLQ (`dlq …`) or the events DLQ (`events dlq …`).
public struct DeadLetterPurgeCommand<Queue: DeadLetterQueueChoice>: Command {
    public static var spec: CommandSpec {
        CommandSpec(
        name: Queue.commandPrefix + " purge", synopsis: "--yes [filters] [--limit N] [options]",
        about: """
        Deletes messages from \(Queue.queueHelp) for good: every message (queue.purge) without filters,
        else only the matching ones (the others stay, in order). Refuses to run without --yes.
        Export first (`dlq export`) if you may want them back.
        """,
        options: [
            .flag(.yes, "really delete", setting: false),
            DlqOptions.limit("delete at most N matching messages"),
            .flag(.json, "print the summary as one JSON object, no progress", setting: false),
        ] + DlqOptions.filterOptions(codes: Queue.knownCodes) + CommonOptions.connectionOptions)
    }

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let command = Self.spec.name
        let (settings, topology, filter, limit) = try DlqOptions.selection(arguments, context, command: command)
        let json = arguments.has(.json)
        guard arguments.has(.yes) else {
            throw UsageError("\(command): refusing to delete without --yes (see what would go with dlq list and the same filters)")
        }
        let queue = Queue.queue(topology)
        var purged = 0, read = 0
        if filter.isEmpty && limit == Int.max {
            purged = try DeadLetterQueuePass.purgeAll(settings: settings, queue: queue, command: command)
        } else {
            let now = Timestamp.now()
            let pass = try DeadLetterQueuePass(settings: settings, queue: queue, command: command)
            let progress = DlqProgress(label: "purging", total: pass.initialCount, quiet: json)
            do {
                try pass.run { delivery in
                    progress.step()
                    read += 1
                    guard purged < limit,
                          filter.matches(DeadLetterEntry(body: delivery.body, headers: delivery.properties.headers), now: now)
                    else { return .keep }
                    purged += 1
                    return .remove
                }
            } catch {
                progress.finish()
                throw CommandFailure("\(command): stopped after deleting \(pass.removed) message(s): \(error)")
            }
            progress.finish()
        }
        context.console.out(json
            ? JSONValue.object(["purged": .int(Int64(purged)), "queue": .string(queue)]).encodedString(.compact)
            : "deleted \(purged) message(s) from \(queue)")
        return 0
    }
}

/// `push-connector dlq purge`.
public typealias DlqPurgeCommand = DeadLetterPurgeCommand<JobsDeadLetters>
