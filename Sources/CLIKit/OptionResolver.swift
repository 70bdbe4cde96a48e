import FoundationEssentials
import PushCore

/// Completes a parsed command line from the other sources, in precedence order: the
/// environment (`PUSH_CONNECTOR_<NAME>`), then the settings file (`--settings FILE` or
/// `PUSH_CONNECTOR_SETTINGS`), then the declared default. Every value is checked against its
/// option's declaration; a bad one is refused naming where it came from (the variable, or the
/// file and key), never echoing a secret.
struct OptionResolver {
    let spec: CommandSpec
    let environment: [String: String]
    let knownKeys: Set<String>

    static let settingsVariable = "PUSH_CONNECTOR_SETTINGS"
    /// Variables of the `PUSH_CONNECTOR_` family that name no option: the settings file, the
    /// broker password (`AMQPCredentialResolver`) and the image's health URL (deploy/Dockerfile).
    static let otherVariables: Set<String> = [settingsVariable, "PUSH_CONNECTOR_AMQP_PASSWORD", "PUSH_CONNECTOR_AMQP_PASSWORD_FILE",
                                              "PUSH_CONNECTOR_HEALTH_URL"]

    func complete(_ parsed: inout ParsedArguments) throws(UsageError) {
        let command = spec.name
        let settingsPath = parsed[.settings] ?? environment[Self.settingsVariable].flatMap { $0.isEmpty ? nil : $0 }
        if parsed[.settings] == nil, settingsPath != nil { parsed.sources[OptionKey.settings.rawValue] = .environment }
        parsed.settingsFile = settingsPath
        let file = try settingsPath.map { path throws(UsageError) in try SettingsFile.load(path, command: command) } ?? [:]
        if let settingsPath {
            let mine = Set(spec.options.filter(\.isSetting).flatMap(\.keys))
            for key in file.keys.sorted() where !mine.contains(key) {
                if knownKeys.contains(key) { continue }  // another command's setting: this one ignores it
                let hint = spec.options.contains { $0.key == key } ? "is command line only" : "is not a push-connector setting"
                throw UsageError("\(command): \(settingsPath): \(key): \(hint)")
            }
        }
        try refuseUnknownVariables()
        for option in spec.options where option.isSetting && parsed.sources[option.name] == nil {
            let formerVariable = option.formerName.map { OptionSpec.environmentVariable(for: $0.name) }
            let formerKey = option.formerName.map { OptionSpec.key(for: $0.name) }
            if let text = environment[option.environmentVariable] {
                try apply(option, strings: try fromEnvironment(option, text), source: .environment,
                          place: "\(option.environmentVariable) (environment)", to: &parsed)
            } else if let formerVariable, let text = environment[formerVariable] {
                try apply(option, strings: try fromEnvironment(option, text), source: .environment,
                          place: "\(formerVariable) (environment)", former: true, to: &parsed)
            } else if let value = file[option.key], let settingsPath {
                try apply(option, strings: try fromFile(option, value, place: "\(settingsPath): \(option.key)"),
                          source: .settingsFile, place: "\(settingsPath): \(option.key)", to: &parsed)
            } else if let formerKey, let value = file[formerKey], let settingsPath {
                try apply(option, strings: try fromFile(option, value, place: "\(settingsPath): \(formerKey)"),
                          source: .settingsFile, place: "\(settingsPath): \(formerKey)", former: true, to: &parsed)
            }
        }
        for option in spec.options where parsed.sources[option.name] == nil {
            if let value = option.defaultValue {
                parsed.values[option.name] = [value]
                parsed.sources[option.name] = .defaultValue
            }
        }
    }

    /// A `PUSH_CONNECTOR_*` variable that no command reads is a typo, refused as a settings
    /// file's unknown key is (another command's variable is ignored: one environment may serve
    /// several commands). Names only the variable, never its value.
    private func refuseUnknownVariables() throws(UsageError) {
        let keys = knownKeys.union(spec.options.filter(\.isSetting).flatMap(\.keys))
        let known = Set(keys.map { "PUSH_CONNECTOR_" + $0.uppercased() }).union(Self.otherVariables)
        for name in environment.keys.sorted() where name.hasPrefix("PUSH_CONNECTOR_") && !known.contains(name) {
            let near = known.filter { Self.editDistance($0, name) <= 2 }.sorted().first
            throw UsageError("\(spec.name): \(name) (environment) is not a push-connector setting"
                + (near.map { " (did you mean \($0)?)" } ?? ""))
        }
    }

    /// Levenshtein distance, for "did you mean".
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }

    /// The values of `option` from a variable: a flag's yes/no, a list split on commas.
    private func fromEnvironment(_ option: OptionSpec, _ text: String) throws(UsageError) -> [String]? {
        switch option.arity {
        case .flag:
            switch text.lowercased() {
            case "1", "true", "yes", "on": return []
            case "0", "false", "no", "off", "": return nil
            default:
                throw UsageError("\(spec.name): \(option.environmentVariable) (environment) must be 1, true, yes, on, 0, false, no or off, "
                    + "got \"\(text)\"")
            }
        case .single: return [text]
        case .repeatable: return text.split(separator: ",").map { $0.trimmingWhitespace() }
        }
    }

    /// The values of `option` from a JSON member: a boolean for a flag, a string or number for
    /// a value, an array of those for a repeatable option.
    private func fromFile(_ option: OptionSpec, _ value: JSONValue, place: String) throws(UsageError) -> [String]? {
        func scalar(_ v: JSONValue) -> String? {
            switch v {
            case .string(let s): return s
            case .int(let i): return String(i)
            case .double(let d): return String(d)
            default: return nil
            }
        }
        switch (option.arity, value) {
        case (.flag, .bool(let on)): return on ? [] : nil
        case (.flag, _): throw UsageError("\(spec.name): \(place) must be true or false")
        case (.single, _):
            guard let s = scalar(value) else { throw UsageError("\(spec.name): \(place) must be a string or a number") }
            return [s]
        case (.repeatable, .array(let items)):
            let strings = items.compactMap(scalar)
            guard strings.count == items.count else { throw UsageError("\(spec.name): \(place) must be an array of strings") }
            return strings
        case (.repeatable, _):
            guard let s = scalar(value) else { throw UsageError("\(spec.name): \(place) must be an array of strings") }
            return [s]
        }
    }

    /// Sets `option` from `strings` found at `place`; `former`: under the option's former name
    /// (each value translated, a warning recorded).
    private func apply(_ option: OptionSpec, strings: [String]?, source: OptionSource, place: String, former: Bool = false,
                       to parsed: inout ParsedArguments) throws(UsageError) {
        guard var strings else { return }
        if former, let formerName = option.formerName {
            parsed.deprecations += strings.map { option.deprecation(at: place, value: $0) }
            strings = strings.map(formerName.translate)
        }
        if option.arity == .flag {
            parsed.flags.insert(option.name)
        } else {
            for value in strings {
                if let problem = option.kind.problem(value) {
                    throw UsageError("\(spec.name): \(place) \(problem)" + (option.isSecret ? "" : ", got \"\(value)\""))
                }
            }
            parsed.values[option.name] = strings
        }
        parsed.sources[option.name] = source
    }
}

/// The `--settings` file: one JSON object, keyed by option name without the dashes.
enum SettingsFile {
    static func load(_ path: String, command: String) throws(UsageError) -> [String: JSONValue] {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw UsageError("\(command): \(path): settings file \(reason)")
        }
        let json: JSONValue
        do { json = try JSONValue.parse(Array(data)) } catch {
            throw UsageError("\(command): \(path): settings file is not JSON: \(error)")
        }
        guard case .object(let members) = json else {
            throw UsageError("\(command): \(path): settings file must be a JSON object keyed by option name (\"amqp_url\": …)")
        }
        return members
    }
}
