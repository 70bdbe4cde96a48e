/// A command-line usage mistake: printed as one line, exit code 2.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What a command accepts: options that take a value, flags, and how many positionals.
public struct CommandSpec: Sendable {
    public var name: String
    public var valueOptions: Set<String>
    /// Options that may be given several times (their values accumulate).
    public var repeatableOptions: Set<String>
    public var flags: Set<String>
    public var positionals: ClosedRange<Int>
    public var usage: String

    public init(name: String, valueOptions: Set<String> = [], repeatableOptions: Set<String> = [], flags: Set<String> = [],
                positionals: ClosedRange<Int> = 0...0, usage: String) {
        self.name = name
        self.valueOptions = valueOptions.union(repeatableOptions)
        self.repeatableOptions = repeatableOptions
        self.flags = flags
        self.positionals = positionals
        self.usage = usage
    }
}

/// Arguments parsed against a `CommandSpec`. `--name value` and `--name=value` are both
/// accepted; `--` ends options; `-` is a positional (standard input).
public struct ParsedArguments: Sendable {
    public private(set) var values: [String: [String]] = [:]
    public private(set) var flags: Set<String> = []
    public private(set) var positionals: [String] = []
    public private(set) var helpRequested = false

    public init(_ arguments: [String], spec: CommandSpec) throws(UsageError) {
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
            if spec.flags.contains(name) {
                if inline != nil { throw UsageError("\(spec.name): \(name) takes no value") }
                flags.insert(name)
            } else if spec.valueOptions.contains(name) {
                let value: String
                if let inline { value = inline } else {
                    guard i < arguments.count else { throw UsageError("\(spec.name): \(name) needs a value") }
                    value = arguments[i]
                    i += 1
                }
                if !spec.repeatableOptions.contains(name), values[name] != nil {
                    throw UsageError("\(spec.name): \(name) given twice")
                }
                values[name, default: []].append(value)
            } else {
                throw UsageError("\(spec.name): unknown option \(name) (see --help)")
            }
        }
        if !helpRequested, !spec.positionals.contains(positionals.count) {
            let want = spec.positionals.lowerBound == spec.positionals.upperBound
                ? "\(spec.positionals.lowerBound)" : "\(spec.positionals.lowerBound)–\(spec.positionals.upperBound)"
            throw UsageError("\(spec.name): expected \(want) argument(s), got \(positionals.count) (see --help)")
        }
    }

    public func value(_ name: String) -> String? { values[name]?.last }
    public func all(_ name: String) -> [String] { values[name] ?? [] }
    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// A required option's value.
    public func required(_ name: String, in command: String) throws(UsageError) -> String {
        guard let v = value(name) else { throw UsageError("\(command): \(name) is required (see --help)") }
        return v
    }

    /// An integer option within `range`, or `fallback` when absent.
    public func integer(_ name: String, in command: String, default fallback: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(name) else { return fallback }
        guard let v = Int(text), range.contains(v) else {
            throw UsageError("\(command): \(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return v
    }
}
