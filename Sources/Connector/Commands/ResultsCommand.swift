import AMQP
import CLIKit
import FoundationEssentials
import Glibc
import PushCore

/// `push-connector results`: reads the results stream from an offset and prints the results
/// that pass the filters — text on a terminal, JSON Lines otherwise (or with `--json`). Reading
/// takes nothing away: any number of readers see every result.
public struct ResultsCommand: Command {
    public static let spec = CommandSpec(
        name: "results",
        synopsis: "[--from POSITION] [--app-id ID] [--outcome OUTCOME] [--job-id ID] [--count N] [--follow] [--timeout SECONDS] [--json] [--summary] [options]",
        about: """
        Reads the results stream <prefix>.results.stream and prints the results that match, in
        stream order: text (offset, time, app, outcome, job, message id, target, error code) on a
        terminal, the result's JSON (one line each) otherwise or with --json. Reading takes nothing
        away: any number of readers see every result. With --app-id on RabbitMQ 3.13 or later the
        broker skips the stream chunks holding no result of that App ID (stream filtering); on
        earlier releases every result is read and filtered here.
        """,
        options: [
            .value(.from, "POSITION", "first (the oldest result kept), last (the last chunk written), next (only\n"
                + "new results), an offset (1234), an RFC 3339 time (2026-11-30T08:00:00Z) or unix seconds (@1764489600)",
                   default: "first", setting: false),
            .value(.appID, "ID", "print only results of this App ID", setting: false),
            .value(.outcome, "OUTCOME", "print only results with this outcome", setting: false),
            .value(.jobID, "ID", "print only results of this job", setting: false),
            .value(.count, "N", "stop after N matching results; exit 1 if fewer arrived", .integer(1...100_000_000), setting: false),
            .flag(.follow, "keep reading new results until --count is reached or the process is stopped", setting: false),
            .value(.timeout, "DURATION", "without --follow: stop once no result arrived for this long", default: "5s",
                   .seconds(1...86_400), setting: false),
            .flag(.json, "JSON Lines even on a terminal", setting: false),
            .flag(.summary, "at the end, one line on standard error: results read, results printed, and whether\n"
                + "the broker filtered by --app-id (RabbitMQ 3.13 and later) or every result was read", setting: false),
        ] + CommonOptions.connectionOptions)

    let arguments: ParsedArguments
    let query: ResultsQuery
    public init(_ arguments: ParsedArguments) throws(UsageError) {
        self.arguments = arguments
        var query = ResultsQuery()
        if let from = arguments[.from] { query.from = try ResultsQuery.offset(from, command: "results") }
        query.appID = arguments[.appID]
        query.outcome = arguments[.outcome]
        query.jobID = arguments[.jobID]
        self.query = query
        _ = try arguments.integer(.count, in: "results", default: 1, range: 1...100_000_000)
        _ = arguments.requiredSeconds(.timeout)
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let settings = try CommonOptions.brokerSettings(arguments, context, command: "results")
        let topology = try CommonOptions.topology(arguments, command: "results")
        let count = arguments[.count] == nil ? nil : try arguments.integer(.count, in: "results", default: 1, range: 1...100_000_000)
        let idle: Duration? = arguments.has(.follow) ? nil : .seconds(arguments.requiredSeconds(.timeout))
        let asJSON = arguments.has(.json) || isatty(STDOUT_FILENO) != 1
        let reader: StreamReader
        do {
            reader = try await StreamReader(settings: settings, stream: topology.resultsStream, from: query.from,
                                            filterValues: query.appID.map { [$0] } ?? [])
        } catch {
            throw CommandFailure.broker(error, command: "results", step: "cannot read the stream \(topology.resultsStream) on "
                + "\(settings.redactedURL) (wrong --prefix? run push-connector topology declare)")
        }
        var printed = 0
        do {
            while count.map({ printed < $0 }) ?? true, let delivery = try await reader.next(within: idle) {
                guard let json = try? JSONValue.parse(delivery.body) else {
                    context.console.err("results: offset \(delivery.streamOffset.map(String.init) ?? "?") is not JSON; skipped")
                    continue
                }
                guard query.matches(json) else { continue }
                context.console.out(asJSON ? String(decoding: delivery.body, as: UTF8.self) : ResultsQuery.text(json, offset: delivery.streamOffset))
                printed += 1
            }
        } catch {
            await reader.close()
            throw CommandFailure("results: reading \(topology.resultsStream) failed after \(printed) result(s): \(error)")
        }
        await reader.close()
        if arguments.has(.summary) {
            let filtering = query.appID == nil ? "no --app-id" : reader.brokerFilters ? "the broker filtered by --app-id"
                : "the broker cannot filter (before RabbitMQ 3.13): every result read"
            context.console.err("results: read \(reader.delivered), printed \(printed); \(filtering)")
        }
        if let count, printed < count {
            context.console.err("results: \(printed) of \(count) result(s) arrived (no new result for \(idle.map { "\($0)" } ?? "-"))")
            return 1
        }
        return 0
    }
}
