import AMQP
import CLIKit
import FoundationEssentials
import PushCore

/// Options and helpers the `dlq` subcommands share: the filter flags, the broker and topology,
/// and the entry printing.
enum DlqOptions {
    /// The filters: per-invocation, so command line only (an exported variable must not narrow
    /// or widen what a purge deletes).
    /// `codes`: the `push-error-code`s of the queue (`DeadLetterQueueChoice.knownCodes`); any
    /// other `--code` is refused, since it could match nothing.
    static func filterOptions(codes: [String]) -> [OptionSpec] { [
        .repeatable(.appID, "ID", "the job's app_id (repeat one filter to accept any of its values;\n"
            + "different filters must all match)", setting: false),
        .repeatable(.code, "CODE", "push-error-code: " + codes.joined(separator: ", "),
                    ValueKind { codes.contains($0) ? nil : "must be a code of this queue: " + codes.joined(separator: ", ") }, setting: false),
        .repeatable(.jobID, "ID", "the job's job_id", setting: false),
        .repeatable(.campaign, "NAME", "the job's campaign", setting: false),
        .value(.olderThan, "AGE", "last failure at least AGE ago (30m, 2h, 7d, 1h30m)", age, setting: false),
        .value(.newerThan, "AGE", "last failure less than AGE ago", age, setting: false),
    ] }

    static let age = ValueKind { DeadLetterFilter.parseDuration($0) == nil ? "must be a duration such as 30m, 2h or 7d" : nil }

    /// `--limit N` with the command's own help.
    static func limit(_ help: String) -> OptionSpec { .value(.limit, "N", help, .integer(1...Int.max), setting: false) }

    /// Default `--window` of `replay` and `import`: publishes in flight, the most a kill may
    /// duplicate, and the messages the tool holds. A replay consumes, publishes and acks: twice
    /// the broker's work of a send. Measured (bench/dlq, 2026-12-03, × the speed of `send` in the
    /// same run): 100 → 0.35–0.52×; 300 → 0.47–0.56× on RabbitMQ 4.3.6 (median 0.55 of six,
    /// 100 000 dead letters), 0.59× on 3.10.8, 0.63× on 4.0.5; 1000 → 0.41–0.68×. 300 is the
    /// smallest window at 0.5× or more on every line.
    static let defaultWindow = 300

    /// `--window N` of `replay` and `import`.
    static func windowOption(_ help: String) -> OptionSpec {
        .value(.window, "N", help, default: String(defaultWindow), .integer(1...10_000))
    }

    /// `--window N` (1–10 000).
    static func window(_ a: ParsedArguments, command: String) throws(UsageError) -> Int {
        try a.integer(.window, in: command, default: defaultWindow, range: 1...10_000)
    }

    /// The filter from the command line.
    /// What every reading `dlq` command starts from: the broker, the topology (for the queue
    /// names), the filters, and `--limit` (unlimited when absent).
    static func selection(_ a: ParsedArguments, _ context: CommandContext, command: String) throws(UsageError)
        -> (settings: AMQPSettings, topology: Topology, filter: DeadLetterFilter, limit: Int) {
        (try settings(a, context, command: command), try CommonOptions.topology(a, command: command), try filter(a, command: command),
         try a.integer(.limit, in: command, default: Int.max, range: 1...Int.max))
    }

    static func filter(_ a: ParsedArguments, command: String) throws(UsageError) -> DeadLetterFilter {
        func age(_ name: OptionKey) throws(UsageError) -> Double? {
            guard let text = a[name] else { return nil }
            guard let seconds = DeadLetterFilter.parseDuration(text) else {
                throw UsageError("\(command): \(name) must be a duration such as 30m, 2h or 7d, got \"\(text)\"")
            }
            return seconds
        }
        return DeadLetterFilter(appIDs: Set(a.all(.appID)), codes: Set(a.all(.code)), jobIDs: Set(a.all(.jobID)),
                                campaigns: Set(a.all(.campaign)), olderThan: try age(.olderThan),
                                newerThan: try age(.newerThan))
    }

    /// Broker settings named for the command (visible in the management UI).
    static func settings(_ a: ParsedArguments, _ context: CommandContext, command: String) throws(UsageError) -> AMQPSettings {
        var settings = try CommonOptions.brokerSettings(a, context, command: command)
        settings.connectionName = "push-connector \(command)"
        return settings
    }

    /// One entry as a JSON object (`list --json`).
    static func json(_ e: DeadLetterEntry) -> JSONValue {
        func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        func number(_ i: Int?) -> JSONValue { i.map { .int(Int64($0)) } ?? .null }
        return .object([
            "job_id": text(e.jobID), "app_id": text(e.appID), "campaign": text(e.campaign), "code": .string(e.code),
            "message": text(e.message), "attempts": number(e.attempts), "replays": .int(Int64(e.replays)),
            "first_failed_at": text(e.firstFailedAt?.description), "last_failed_at": text(e.lastFailedAt?.description),
            "recipients": number(e.targets), "body_bytes": .int(Int64(e.bodyBytes)),
        ])
    }

    static let listHeader = "JOB_ID".padding(to: 38) + "APP_ID".padding(to: 18) + "CODE".padding(to: 24)
        + "ATTEMPTS".padding(to: 9) + "REPLAYS".padding(to: 8) + "FIRST_FAILED".padding(to: 21) + "LAST_FAILED".padding(to: 21)
        + "RECIPIENTS"

    /// One entry as a table row (`list`). The fields come from whoever published the job: control
    /// characters (an ANSI escape, a newline) are shown escaped, never sent to the terminal, and a
    /// value longer than its column is cut with `…` (`--json` prints them whole).
    static func row(_ e: DeadLetterEntry) -> String {
        cell(e.jobID ?? "(no job id)", 38) + cell(e.appID ?? "-", 18) + cell(e.code, 24)
            + (e.attempts.map(String.init) ?? "-").padding(to: 9) + String(e.replays).padding(to: 8)
            + (e.firstFailedAt?.description ?? "-").padding(to: 21) + (e.lastFailedAt?.description ?? "-").padding(to: 21)
            + (e.targets.map(String.init) ?? "-")
    }

    /// `text` made printable, cut to `width - 1` characters (the last one `…` when cut) and padded.
    static func cell(_ text: String, _ width: Int) -> String {
        let shown = printable(text)
        guard shown.count >= width else { return shown.padding(to: width) }
        return String(shown.prefix(width - 2)) + "… "
    }

    /// `text` with control characters and direction overrides escaped (`PrintableText`).
    static func printable(_ text: String) -> String { PrintableText.escaped(text) }

    /// `--rate N`: messages per second (0.1 to 100 000), nil when absent.
    static func rate(_ a: ParsedArguments, command: String) throws(UsageError) -> Double? {
        guard let text = a[.rate] else { return nil }
        guard let rate = rate(text) else {
            throw UsageError("\(command): --rate must be messages per second from 0.1 to 100000 (e.g. 50 or 50/s), got \"\(text)\"")
        }
        return rate
    }

    /// `50` or `50/s`, from 0.1 to 100 000; nil otherwise.
    static func rate(_ text: String) -> Double? {
        let number = text.hasSuffix("/s") ? String(text.dropLast(2)) : text
        guard let rate = Double(number), rate >= 0.1, rate <= 100_000 else { return nil }
        return rate
    }
}
