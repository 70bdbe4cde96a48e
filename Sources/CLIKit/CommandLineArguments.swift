/// A command-line usage mistake: printed as one line, exit code 2.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What a command accepts: its options (each declared once, see `OptionSpec`), how many
/// positionals, and the help text built from them.
public struct CommandSpec: Sendable {
    public var name: String
    /// Every option, in help order; `--settings` is added to every command.
    public var options: [OptionSpec]
    public var positionals: ClosedRange<Int>
    public var usage: String
    /// Options this command used to list and never read: given on the command line they are
    /// skipped with a warning (and their value with them), so that scripts sharing one set of
    /// broker arguments keep working for a release; the help no longer lists them.
    public var retired: [RetiredOption]

    /// One declaration per option: the help lists `options` in order after `about`, then
    /// `footer`, then how the environment and the settings file name them.
    public init(name: String, synopsis: String, about: String, options: [OptionSpec], positionals: ClosedRange<Int> = 0...0,
                footer: String = "") {
        self.name = name
        self.options = options + [Self.settingsOption] + (options.contains { $0.id == .check } ? [] : [CommonOptions.check])
        self.positionals = positionals
        let ids = Set(self.options.map(\.id))
        retired = Self.retiredOptions.filter { !ids.contains($0.id) && $0.appliesTo(ids) }
        var text = "usage: push-connector \(name) \(synopsis)\n\n\(about)\n\noptions:\n"
        text += self.options.map(\.helpLine).joined(separator: "\n")
        if !footer.isEmpty { text += "\n\n" + footer }
        usage = text + "\n\n" + Self.sourcesNote
    }

    public var valueOptions: Set<String> { Set(options.filter { $0.arity != .flag }.map(\.name)) }
    public var repeatableOptions: Set<String> { Set(options.filter { $0.arity == .repeatable }.map(\.name)) }
    public var flags: Set<String> { Set(options.filter { $0.arity == .flag }.map(\.name)) }

    public func option(_ name: String) -> OptionSpec? { options.first { $0.name == name } }
    public func option(_ id: OptionKey) -> OptionSpec? { options.first { $0.id == id } }

    /// The option that was called `name` before a rename.
    public func option(formerlyNamed name: String) -> OptionSpec? { options.first { $0.formerName?.name == name } }

    /// An option skipped with a warning by the commands that never read it.
    public struct RetiredOption: Sendable {
        public let id: OptionKey
        public var name: String { id.rawValue }
        let takesValue: Bool
        let why: String
        /// Whether a command with these options used to list it.
        let appliesTo: @Sendable (Set<OptionKey>) -> Bool
    }

    /// `--retry-tiers`, once listed by every command that takes `--amqp-url` (`send`, `results`,
    /// the `dlq` commands, `cancel`, `pause`).
    static let retiredOptions = [
        RetiredOption(id: .retryTiers, takesValue: true, why: "only the worker and the topology commands read retry tiers",
                      appliesTo: { $0.contains(.amqpURL) }),
    ]

    public func retiredOption(_ name: String) -> RetiredOption? { retired.first { $0.name == name } }

    /// `--settings FILE` (env `PUSH_CONNECTOR_SETTINGS`), on every command.
    static let settingsOption = OptionSpec.value(
        .settings, "FILE", "JSON object of settings keyed by option name without dashes ({\"amqp_url\": …, \"prefetch\": 100});\n"
            + "env PUSH_CONNECTOR_SETTINGS", setting: false)

    static let sourcesNote = """
        Every option not marked [command line only] may also come from the environment variable
        PUSH_CONNECTOR_<NAME> (--amqp-url: PUSH_CONNECTOR_AMQP_URL; flags take 1/true/yes/on or 0/false/no/off)
        or from the --settings file (key amqp_url). Precedence: command line > environment > file > default.
        """
}

/// Where an option's value came from (`--check` prints it).
public enum OptionSource: String, Sendable {
    case commandLine = "command line"
    case environment
    case settingsFile = "settings file"
    case defaultValue = "default"
}

/// Arguments parsed against a `CommandSpec`. `--name value` and `--name=value` are both
/// accepted; `--` ends options; `-` is a positional (standard input). With an environment, each
/// option the command line leaves out is then taken from the environment, the settings file or
/// its default, and every value is checked against its declaration (`OptionResolver`).
public struct ParsedArguments: Sendable {
    public internal(set) var values: [String: [String]] = [:]
    public internal(set) var flags: Set<String> = []
    public private(set) var positionals: [String] = []
    public private(set) var helpRequested = false
    /// Where each present option came from, by name (see `source(of:)`).
    public internal(set) var sources: [String: OptionSource] = [:]
    /// The settings file used, if any.
    public internal(set) var settingsFile: String?
    /// One warning per value given under an option's former name (the caller prints them).
    public internal(set) var deprecations: [String] = []
    public let spec: CommandSpec

    /// The command line alone (no environment, no settings file, no defaults).
    public init(_ arguments: [String], spec: CommandSpec) throws(UsageError) {
        self.spec = spec
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            if argument == "--help" || argument == "-h" { helpRequested = true; continue }
            var name = argument
            var inline: String?
            if let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                inline = String(argument[argument.index(after: eq)...])
            }
            if spec.option(name) == nil, let retired = spec.retiredOption(name) {
                if retired.takesValue, inline == nil {
                    guard i < arguments.count else { throw UsageError("\(spec.name): \(name) needs a value") }
                    i += 1
                }
                deprecations.append("\(name) is ignored here (\(retired.why)) and will be refused by a later release: drop it")
                continue
            }
            var former: String?
            if spec.option(name) == nil, let renamed = spec.option(formerlyNamed: name) { (former, name) = (name, renamed.name) }
            guard let option = spec.option(name) else { throw UsageError("\(spec.name): unknown option \(name) (see --help)") }
            sources[name] = .commandLine
            if option.arity == .flag {
                if inline != nil { throw UsageError("\(spec.name): \(name) takes no value") }
                flags.insert(name)
                continue
            }
            var value: String
            if let inline { value = inline } else {
                guard i < arguments.count else { throw UsageError("\(spec.name): \(former ?? name) needs a value") }
                value = arguments[i]
                i += 1
            }
            if let former, let formerName = option.formerName {
                deprecations.append(option.deprecation(at: former, value: value))
                value = formerName.translate(value)
            }
            if option.arity != .repeatable, values[name] != nil { throw UsageError("\(spec.name): \(name) given twice") }
            if let problem = option.kind.problem(value) {
                throw UsageError("\(spec.name): \(name) \(problem)" + (option.isSecret ? "" : ", got \"\(value)\""))
            }
            values[name, default: []].append(value)
        }
        if !helpRequested, !spec.positionals.contains(positionals.count) {
            let want = spec.positionals.lowerBound == spec.positionals.upperBound
                ? "\(spec.positionals.lowerBound)" : "\(spec.positionals.lowerBound)–\(spec.positionals.upperBound)"
            throw UsageError("\(spec.name): expected \(want) argument(s), got \(positionals.count) (see --help)")
        }
    }

    /// The command line, then the environment, the settings file and the defaults.
    /// `knownKeys`: the settings keys of every command, so a file shared by several commands
    /// may hold keys this one ignores, while a key no command knows is refused as a typo.
    public init(_ arguments: [String], spec: CommandSpec, environment: [String: String],
                knownKeys: Set<String> = []) throws(UsageError) {
        try self.init(arguments, spec: spec)
        if helpRequested { return }
        try OptionResolver(spec: spec, environment: environment, knownKeys: knownKeys).complete(&self)
    }

    /// The option's value (its last, if repeatable), nil when absent.
    public subscript(option: OptionKey) -> String? { values[option.rawValue]?.last }
    /// Every value of a repeatable option.
    public func all(_ option: OptionKey) -> [String] { values[option.rawValue] ?? [] }
    /// Whether a flag is on.
    public func has(_ flag: OptionKey) -> Bool { flags.contains(flag.rawValue) }

    /// Where the option's value came from, nil when absent.
    public func source(of option: OptionKey) -> OptionSource? { sources[option.rawValue] }

    /// A required option's value.
    public func required(_ name: OptionKey, in command: String) throws(UsageError) -> String {
        guard let v = self[name] else {
            throw UsageError("\(command): \(name) is required (or \(OptionSpec.environmentVariable(for: name.rawValue)); see --help)")
        }
        return v
    }

    /// An integer option within `range`, or `fallback` when absent.
    public func integer(_ name: OptionKey, in command: String, default fallback: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = self[name] else { return fallback }
        guard let v = Int(text), range.contains(v) else {
            throw UsageError("\(command): \(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return v
    }

    /// The value of an option declared with an `.integer` kind: already checked, so only the
    /// absence of a value (an option without a default) gives nil.
    public func int(_ name: OptionKey) -> Int? { self[name].flatMap { Int($0) } }

    /// The value of an `.integer` option declared with a default: always present.
    public func integer(_ name: OptionKey) -> Int {
        guard let v = int(name) else { preconditionFailure("\(spec.name): \(name) is not an integer option with a default") }
        return v
    }
}
