import FoundationEssentials
import ServiceRuntime

/// Where a command writes: standard output for results, standard error for diagnostics.
public struct Console: Sendable {
    public var out: @Sendable (String) -> Void
    public var err: @Sendable (String) -> Void

    /// The process's real standard output and error.
    public static let standard = Console(
        out: { text in FileOutput.standardOutput.write(line: text) },
        err: { text in FileOutput.standardError.write(line: text) })

    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
        self.out = out
        self.err = err
    }
}

/// What every command runs with: its console and the process environment.
public struct CommandContext: Sendable {
    public var console: Console
    public var environment: [String: String]

    public init(console: Console = .standard, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.console = console
        self.environment = environment
    }
}

/// One subcommand of `push-connector`: its argument spec, and what it does.
public protocol Command: Sendable {
    static var spec: CommandSpec { get }
    init(_ arguments: ParsedArguments) throws(UsageError)
    /// Runs the command; the result is the process exit code.
    func run(_ context: CommandContext) async throws -> Int32
    /// True when `run` handles `--check` itself (loads and checks its files); otherwise the tool
    /// answers `--check` once the options are resolved and the command is built, without running it.
    static var checksItself: Bool { get }
}

extension Command {
    public static var checksItself: Bool { false }
}

/// An error a command reports in one line and exits 1 with (2 for bad input it was given).
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    public let description: String
    public let exitCode: Int32

    public init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}
