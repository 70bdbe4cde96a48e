import AMQP
import CLIKit
import FoundationEssentials
import PushCore

/// `push-connector dlq import FILE`: publishes the messages of a `dlq export` file back into the
/// DLQ, in file order, with up to `--window` publishes in flight and the confirms read as a stream.
/// `Queue` picks the jobs DLQ (`dlq …`) or the events DLQ (`events dlq …`).
public struct DeadLetterImportCommand<Queue: DeadLetterQueueChoice>: Command {
    public static var spec: CommandSpec {
        CommandSpec(
        name: Queue.commandPrefix + " import", synopsis: "FILE|- [--skip N] [--window N] [options]",
        about: """
        Publishes every message of a `dlq export` file (- for standard input) into \(Queue.queueHelp), in
        file order, with publisher confirms (up to --window in flight), bodies, properties and headers
        exactly as exported. The whole file is checked first: nothing is published if a line is not valid.
        """,
        options: [
            .value(.skip, "N", "leave out the first N messages (to resume an import that stopped)", default: "0",
                   .integer(0...Int.max), setting: false),
            DlqOptions.windowOption("publishes in flight at most; resuming a stopped import with --skip may\n"
                + "import up to N messages twice"),
            .flag(.json, "print the summary as one JSON object, no progress", setting: false),
        ] + CommonOptions.connectionOptions,
        positionals: 1...1)
    }

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let command = Self.spec.name
        let settings = try DlqOptions.settings(arguments, context, command: command)
        let topology = try CommonOptions.topology(arguments, command: command)
        let skip = arguments.integer(.skip)
        let json = arguments.has(.json)
        let path = arguments.positionals[0]
        // Read twice, one line at a time (bounded memory): check every line, then publish.
        let file = try ExportFileLines(path: path)
        func isBlank(_ line: ArraySlice<UInt8>) -> Bool { line.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }
        var problems: [String] = []
        var total = 0
        try file.forEachLine { number, line in
            if isBlank(line) { return true }
            total += 1
            do { _ = try DeadLetterRecord.decode(line: line) } catch { problems.append("\(path):\(number): \(error)") }
            return problems.count < 20
        }
        guard problems.isEmpty else {
            throw CommandFailure(problems.joined(separator: "\n") + "\n\(command): nothing was imported", exitCode: 2)
        }
        let client: AMQPChannelClient
        do { client = try AMQPChannelClient(settings: settings) } catch {
            throw CommandFailure.broker(error, command: command, step: "cannot connect to \(settings.redactedURL)")
        }
        defer { client.close() }
        do { _ = try client.messageCount(queue: Queue.queue(topology)) } catch {
            throw CommandFailure("\(command): the DLQ \(Queue.queue(topology)) does not exist (wrong --prefix? run topology declare): \(error)")
        }
        let window = try DlqOptions.window(arguments, command: command)
        let todo = max(0, total - skip)
        let progress = DlqProgress(label: "importing", total: todo, quiet: json)
        // Sequence numbers of the publishes in flight, in file order; `imported` counts the
        // confirmed prefix of the file, which is what --skip can resume after.
        var inFlight: [UInt64] = []
        var confirmedAhead = Set<UInt64>()
        var imported = 0, seen = 0
        func readConfirms(wait: Bool) throws {
            while let event = try client.nextConfirm(timeoutMicros: wait ? 1_000_000 : 0) {
                switch event {
                case .ack(let sequence, let multiple):
                    if multiple { inFlight.removeAll { $0 <= sequence } } else { confirmedAhead.insert(sequence) }
                    while let first = inFlight.first, confirmedAhead.remove(first) != nil { inFlight.removeFirst() }
                case .nack: throw AMQPError.nacked()
                case .returned(let error): throw error
                }
                imported = seen - skip - inFlight.count
                if !wait || inFlight.isEmpty { break }
            }
        }
        do {
            try file.forEachLine { _, line in
                if isBlank(line) { return true }
                seen += 1
                guard seen > skip else { return true }
                let record = try DeadLetterRecord.decode(line: line)
                inFlight.append(try client.publish(exchange: "", routingKey: Queue.queue(topology), body: record.body,
                                                   properties: record.properties, mandatory: true))
                try readConfirms(wait: false)
                while inFlight.count >= window { try readConfirms(wait: true) }
                progress.step()
                return true
            }
            while !inFlight.isEmpty { try readConfirms(wait: true) }
        } catch {
            progress.finish()
            throw CommandFailure("\(command): stopped after \(imported) of \(todo) message(s) confirmed in file order: \(error); "
                + "resume with --skip \(skip + imported) (up to \(inFlight.count) of the messages after those may be imported twice)")
        }
        progress.finish()
        context.console.out(json
            ? JSONValue.object(["imported": .int(Int64(imported)), "skipped": .int(Int64(min(skip, total))),
                                "queue": .string(Queue.queue(topology))]).encodedString(.compact)
            : "imported \(imported) message(s) into \(Queue.queue(topology)), all confirmed")
        return 0
    }
}

/// `push-connector dlq import`.
public typealias DlqImportCommand = DeadLetterImportCommand<JobsDeadLetters>
