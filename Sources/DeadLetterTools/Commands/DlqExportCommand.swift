import AMQP
import CLIKit
import FoundationEssentials
import Glibc
import PushCore
import ServiceRuntime

/// `push-connector dlq export FILE`: writes the matching DLQ messages to JSON Lines, losslessly,
/// without removing them.
/// `Queue` picks the jobs DLQ (`dlq …`) or the events DLQ (`events dlq …`).
public struct DeadLetterExportCommand<Queue: DeadLetterQueueChoice>: Command {
    public static var spec: CommandSpec {
        CommandSpec(
        name: Queue.commandPrefix + " export", synopsis: "FILE|- [filters] [--limit N] [options]",
        about: """
        Writes the matching messages of \(Queue.queueHelp) to FILE (- for standard output) as JSON Lines,
        in queue order, one message per line: the body (its UTF-8 text when it is valid UTF-8 and JSON,
        else base64, named by "body_encoding"), every property, and every header with its AMQP type.
        Nothing is removed from the queue (purge afterwards with the same filters if you want that).
        FILE must not exist yet. `dlq import FILE` puts the messages back. See docs/operations.md.
        """,
        options: [DlqOptions.limit("export at most N messages"), .flag(.json, "print the summary as one JSON object, no progress", setting: false)] + DlqOptions.filterOptions(codes: Queue.knownCodes)
            + CommonOptions.connectionOptions,
        positionals: 1...1)
    }

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let command = Self.spec.name
        let (settings, topology, filter, limit) = try DlqOptions.selection(arguments, context, command: command)
        let json = arguments.has(.json)
        let path = arguments.positionals[0]
        let output: FileOutput
        let temporary = path + ".partial-\(getpid())"
        if path == "-" {
            output = .standardOutput
        } else {
            guard !FileManager.default.fileExists(atPath: path) else {
                throw CommandFailure("\(command): \(path) already exists; choose a new file name", exitCode: 2)
            }
            // Written beside FILE under a temporary name and renamed once complete: a failed export
            // (a full disk, a broken connection) leaves no partial FILE that looks like a whole one.
            guard let file = FileOutput.create(path: temporary) else { throw CommandFailure("\(command): cannot create \(temporary)", exitCode: 2) }
            output = file
        }
        let now = Timestamp.now()
        var exported = 0, read = 0, bytes = 0, closed = false
        let pass = try DeadLetterQueuePass(settings: settings, queue: Queue.queue(topology), command: command)
        let progress = DlqProgress(label: "exporting", total: pass.initialCount, quiet: json)
        var buffer = Data()
        do {
            try pass.run { delivery in
                progress.step()
                read += 1
                guard exported < limit else { return .keep }
                let entry = DeadLetterEntry(body: delivery.body, headers: delivery.properties.headers)
                guard filter.matches(entry, now: now) else { return .keep }
                buffer.append(contentsOf: DeadLetterRecord(body: delivery.body, properties: delivery.properties).json.encodedBytes())
                buffer.append(0x0A)
                exported += 1
                if buffer.count > 1 << 20 {
                    try output.write(buffer)
                    bytes += buffer.count
                    buffer.removeAll(keepingCapacity: true)
                }
                return .keep
            }
            try output.write(buffer)
            bytes += buffer.count
            if path != "-" {
                try output.synchronize()
                closed = true  // closed once: a second close could close a descriptor opened since
                try output.close()
                guard rename(temporary, path) == 0 else { throw FileWriteError(code: errno) }
            }
        } catch {
            progress.finish()
            if path != "-" {
                if !closed { try? output.close() }
                unlink(temporary)
            }
            throw CommandFailure("\(command): export to \(path) failed after \(exported) message(s), nothing written to \(path): \(error)")
        }
        progress.finish()
        let summary = json
            ? JSONValue.object(["exported": .int(Int64(exported)), "read": .int(Int64(read)), "file": .string(path),
                                "bytes": .int(Int64(bytes))]).encodedString(.compact)
            : "exported \(exported) of \(read) message(s) from \(Queue.queue(topology)) to \(path) (\(bytes) bytes); the DLQ is unchanged"
        if path == "-" { context.console.err(summary) } else { context.console.out(summary) }
        return 0
    }
}

/// `push-connector dlq export`.
public typealias DlqExportCommand = DeadLetterExportCommand<JobsDeadLetters>
