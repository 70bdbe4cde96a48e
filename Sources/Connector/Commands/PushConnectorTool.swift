import CLIKit
import ConfigurationFiles
import DeadLetterTools
import ServiceRuntime
/// The `push-connector` command line: picks the subcommand, parses its arguments, runs it and
/// turns every failure into one line on standard error and an exit code (2: bad input).
public enum PushConnectorTool {
    /// Subcommands by the words that name them.
    static let commands: [(words: [String], type: any Command.Type, summary: String)] = [
        (["compose"], ComposeCommand.self, "print the FCM request bodies composed for a job"),
        (["config", "check"], ConfigCheckCommand.self, "validate an App ID configuration file"),
        (["topology", "declare"], TopologyDeclareCommand.self, "declare exchanges and queues (idempotent)"),
        (["topology", "definitions"], TopologyDefinitionsCommand.self, "print the topology as RabbitMQ definitions JSON"),
        (["topology", "migrate-results"], TopologyMigrateResultsCommand.self, "move an earlier version's results queues into the stream"),
        (["worker"], WorkerCommand.self, "consume send jobs and deliver them through FCM"),
        (["send"], SendCommand.self, "publish send jobs (JSON or JSON Lines) with confirms"),
        (["cancel"], CancelCommand.self, "cancel a campaign or a job on every worker (recipients not sent: cancelled)"),
        (["cancel", "list"], CancelListCommand.self, "list the cancels and App ID pauses in force"),
        (["cancel", "lift"], CancelLiftCommand.self, "end a cancel or a pause early"),
        (["pause"], PauseCommand.self, "pause an App ID on every worker (its jobs wait, nothing lost)"),
        (["resume"], ResumeCommand.self, "resume a paused App ID"),
        (["results"], ResultsCommand.self, "print results from the results stream (filters, offsets, --follow)"),
        (["push"], PushCommand.self, "compose and send one message directly (test an App ID)"),
        (["dlq", "stats"], DlqStatsCommand.self, "count dead-lettered jobs by code, App ID and age"),
        (["dlq", "list"], DlqListCommand.self, "list dead-lettered jobs (non-destructive, order kept)"),
        (["dlq", "replay"], DlqReplayCommand.self, "move dead-lettered jobs back to the job exchange"),
        (["dlq", "export"], DlqExportCommand.self, "write dead-lettered messages to JSON Lines, losslessly"),
        (["dlq", "import"], DlqImportCommand.self, "publish an export file back into the DLQ"),
        (["dlq", "purge"], DlqPurgeCommand.self, "delete dead-lettered jobs (all or matching) with --yes"),
        (["events"], EventsCommand.self, "serve POST /event and store sends and events in SQLite"),
        (["events", "dlq", "stats"], DeadLetterStatsCommand<EventsDeadLetters>.self, "count the events DLQ by code and age"),
        (["events", "dlq", "list"], DeadLetterListCommand<EventsDeadLetters>.self, "list the events DLQ (non-destructive, order kept)"),
        (["events", "dlq", "replay"], DeadLetterReplayCommand<EventsDeadLetters>.self, "move events DLQ messages back to the queue they came from"),
        (["events", "dlq", "export"], DeadLetterExportCommand<EventsDeadLetters>.self, "write the events DLQ to JSON Lines, losslessly"),
        (["events", "dlq", "import"], DeadLetterImportCommand<EventsDeadLetters>.self, "publish an export file back into the events DLQ"),
        (["events", "dlq", "purge"], DeadLetterPurgeCommand<EventsDeadLetters>.self, "delete events DLQ messages (all or matching) with --yes"),
        (["stats"], StatsCommand.self, "print the funnel of a job, campaign or App ID"),
        (["health"], HealthCommand.self, "GET a health URL: exit 0 on 2xx, 1 otherwise (container HEALTHCHECK)"),
    ]

    /// Every settings-file key some command accepts: a shared settings file may hold another
    /// command's keys, but a key no command knows is a typo and is refused.
    static let settingKeys: Set<String> = Set(commands.flatMap { $0.type.spec.options.filter(\.isSetting).flatMap(\.keys) })

    static var overview: String {
        var lines = ["usage: push-connector COMMAND [options]   (COMMAND --help for details; --version)", "", "commands:"]
        for c in commands { lines.append("  " + c.words.joined(separator: " ").padding(to: 22) + c.summary) }
        return lines.joined(separator: "\n")
    }

    /// Runs `arguments` (without the program name); returns the exit code.
    public static func main(_ arguments: [String], context: CommandContext = CommandContext()) async -> Int32 {
        if arguments.isEmpty || arguments == ["--help"] || arguments == ["-h"] || arguments == ["help"] {
            context.console.out(overview)
            return arguments.isEmpty ? 2 : 0
        }
        if arguments == ["--version"] || arguments == ["version"] {
            context.console.out("push-connector \(BuildInfo.version)")
            return 0
        }
        guard let match = commands.filter({ Array(arguments.prefix($0.words.count)) == $0.words })
            .max(by: { $0.words.count < $1.words.count })
        else {
            // A command group named alone ("dlq", "topology"): say which subcommands it has.
            let group = commands.filter { $0.words.count > 1 && $0.words[0] == arguments[0] }
            if !group.isEmpty {
                let names = group.map { $0.words.dropFirst().joined(separator: " ") }.joined(separator: ", ")
                let help = arguments.count == 2 && (arguments[1] == "--help" || arguments[1] == "-h")
                if help {
                    context.console.out("usage: push-connector \(arguments[0]) SUBCOMMAND [options]\n\nsubcommands: \(names)")
                    return 0
                }
                context.console.err("push-connector \(arguments[0]): expected a subcommand: \(names) (see push-connector --help)")
                return 2
            }
            context.console.err("push-connector: unknown command \"\(arguments[0])\" (see push-connector --help)")
            return 2
        }
        let rest = Array(arguments.dropFirst(match.words.count))
        do {
            let parsed = try ParsedArguments(rest, spec: match.type.spec, environment: context.environment, knownKeys: settingKeys)
            if parsed.helpRequested {
                context.console.out(match.type.spec.usage)
                return 0
            }
            for warning in parsed.deprecations { context.console.err("push-connector \(match.type.spec.name): warning: \(warning)") }
            let command = try match.type.init(parsed)
            if parsed.has(.check), !match.type.checksItself {
                // The broker URL and password (file) resolve as they would at start.
                if match.type.spec.option(.amqpURL) != nil {
                    _ = try CommonOptions.brokerSettings(parsed, context, command: match.type.spec.name)
                }
                context.console.out((["\(match.type.spec.name): options OK (not run; nothing was connected)"]
                    + CheckReport.optionLines(parsed)).joined(separator: "\n"))
                return 0
            }
            return try await command.run(context)
        } catch let error as UsageError {
            context.console.err("push-connector \(error)")
            return 2
        } catch let error as CommandFailure {
            context.console.err(error.description)
            return error.exitCode
        } catch let error as ConfigurationError {
            context.console.err(error.description)
            return 2
        } catch {
            context.console.err("push-connector: \(error)")
            return 1
        }
    }
}
