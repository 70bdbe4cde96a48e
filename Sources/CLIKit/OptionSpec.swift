import FoundationEssentials
import Glibc

/// One option of a command, declared once: its name, how many values it takes, its default, how
/// a value is checked, its help line and whether it may come from the environment and the
/// settings file. Parsing, the environment (`PUSH_CONNECTOR_<NAME>`), the settings file (key
/// `<name>` with `_` for `-`), `--help` and `--check` all read this one declaration.
public struct OptionSpec: Sendable {
    /// Flag (no value), one value, or a value that may be given several times.
    public enum Arity: Sendable, Equatable { case flag, single, repeatable }

    /// Which option (`.amqpURL`).
    public let id: OptionKey
    /// `--amqp-url`.
    public var name: String { id.rawValue }
    public let arity: Arity
    /// What the help shows for the value: `URL`, `N`, `FILE`.
    public let placeholder: String
    /// The value when no source gives one (nil: absent).
    public let defaultValue: String?
    /// One line (or a few) of help, without the default.
    public let help: String
    /// How a value is checked, from every source.
    public let kind: ValueKind
    /// False for per-invocation options (`--yes`, `--dry-run`, filters, message fields): those
    /// come from the command line only, so an exported variable cannot turn them on for every run.
    public let isSetting: Bool
    /// Its value is never printed (a URL with a password): errors and `--check` redact it.
    public let isSecret: Bool
    /// The name it had before a rename, still read (with a warning) from every source.
    public private(set) var formerName: FormerName?

    /// A name an option had before, with what turns an old value into a new one (`5` under
    /// `--batch-delay-ms` is `5ms` under `--batch-delay`).
    public struct FormerName: Sendable {
        public let name: String
        public let translate: @Sendable (String) -> String
    }

    public init(_ id: OptionKey, arity: Arity, placeholder: String = "", defaultValue: String? = nil, help: String = "",
                kind: ValueKind = .text, isSetting: Bool = true, isSecret: Bool = false) {
        self.id = id
        self.arity = arity
        self.placeholder = placeholder
        self.defaultValue = defaultValue
        self.help = help
        self.kind = kind
        self.isSetting = isSetting
        self.isSecret = isSecret
    }

    /// An option with one value.
    public static func value(_ id: OptionKey, _ placeholder: String, _ help: String, default defaultValue: String? = nil,
                             _ kind: ValueKind = .text, setting: Bool = true, secret: Bool = false) -> OptionSpec {
        OptionSpec(id, arity: .single, placeholder: placeholder, defaultValue: defaultValue, help: help, kind: kind,
                   isSetting: setting, isSecret: secret)
    }

    /// An option that may be given several times; the environment gives a comma-separated list,
    /// the settings file an array of strings.
    public static func repeatable(_ id: OptionKey, _ placeholder: String, _ help: String, _ kind: ValueKind = .text,
                                  setting: Bool = true) -> OptionSpec {
        OptionSpec(id, arity: .repeatable, placeholder: placeholder, help: help, kind: kind, isSetting: setting)
    }

    /// A flag; from the environment `1|true|yes|on` or `0|false|no|off`, in the file a boolean.
    public static func flag(_ id: OptionKey, _ help: String, setting: Bool = true) -> OptionSpec {
        OptionSpec(id, arity: .flag, help: help, isSetting: setting)
    }

    /// This option, also read under `name`, its name before a rename: the command line, the
    /// environment and the settings file accept the old spelling and warn.
    public func formerly(_ name: String, translate: @escaping @Sendable (String) -> String = { $0 }) -> OptionSpec {
        var renamed = self
        renamed.formerName = FormerName(name: name, translate: translate)
        return renamed
    }

    /// The warning for a value given under the former name, at `place` (`--batch-delay-ms`,
    /// `PUSH_CONNECTOR_BATCH_DELAY_MS (environment)`, `FILE: batch_delay_ms`).
    func deprecation(at place: String, value: String) -> String {
        let translated = formerName.map { $0.translate(value) } ?? value
        let shown = isSecret || translated == value ? "" : " (\(value) reads as \(translated))"
        return "\(place) is deprecated and will be removed: use \(name)\(shown)"
    }

    /// `amqp_url` for `--amqp-url`: the settings file key.
    public var key: String { Self.key(for: name) }

    /// Its settings keys: `key`, and the key of its former name.
    public var keys: [String] { [key] + (formerName.map { [Self.key(for: $0.name)] } ?? []) }

    /// `PUSH_CONNECTOR_AMQP_URL` for `--amqp-url`.
    public var environmentVariable: String { Self.environmentVariable(for: name) }

    static func key(for name: String) -> String {
        String(name.drop(while: { $0 == "-" })).replacing("-", with: "_")
    }

    static func environmentVariable(for name: String) -> String { "PUSH_CONNECTOR_" + key(for: name).uppercased() }

    /// The help line: `  --prefetch N          unacked jobs per lane (default 100)`.
    var helpLine: String {
        var head = "  " + name + (arity == .flag ? "" : " " + placeholder)
        var text = help
        if let defaultValue { text += " (default \(defaultValue))" }
        if !isSetting && id != .settings { text += " [command line only]" }
        if let formerName { text += "; formerly \(formerName.name), still read" }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let indent = String(repeating: " ", count: 24)
        if head.count >= 24 { head += "\n" + indent } else { head = head.padding(to: 24) }
        return head + lines.joined(separator: "\n" + indent)
    }
}

/// How an option's value is checked: a rule, and the phrase that states it in an error.
public struct ValueKind: Sendable {
    /// Nil when `value` is acceptable, else the rule it breaks ("must be …").
    public let problem: @Sendable (String) -> String?

    public init(problem: @escaping @Sendable (String) -> String?) { self.problem = problem }

    /// Any text.
    public static let text = ValueKind { _ in nil }

    /// Non-empty text.
    public static let nonEmpty = ValueKind { $0.isEmpty ? "must not be empty" : nil }

    /// A whole number within `range`.
    public static func integer(_ range: ClosedRange<Int>) -> ValueKind {
        ValueKind { text in
            guard let v = Int(text), range.contains(v) else {
                return "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
            }
            return nil
        }
    }

    /// One of `choices`.
    public static func choice(_ choices: [String]) -> ValueKind {
        ValueKind { choices.contains($0) ? nil : "must be one of \(choices.joined(separator: ", "))" }
    }

    /// `HOST:PORT` (IPv4 host or name; an empty host means every address).
    public static let hostPort = ValueKind { text in HostPort(text) == nil ? "must be HOST:PORT (port 0 to 65535)" : nil }

    /// An `http://` or `https://` URL.
    public static let httpURL = ValueKind { text in
        (text.hasPrefix("http://") || text.hasPrefix("https://")) && text.count > 8 ? nil : "must be an http:// or https:// URL"
    }

    /// A path to a file that exists and can be read now.
    public static let readableFile = ValueKind { path in
        guard !path.isEmpty else { return "must name a file" }
        var status = stat()
        guard stat(path, &status) == 0 else { return "names a file that does not exist" }
        if status.st_mode & S_IFMT == S_IFDIR { return "names a directory, not a file" }
        return access(path, R_OK) == 0 ? nil : "names a file that cannot be read"
    }
}

/// `HOST:PORT`, split.
public struct HostPort: Sendable, Equatable {
    public var host: String
    public var port: Int

    /// Nil unless `text` is `HOST:PORT` with a port from 0 to 65535; an empty host is 0.0.0.0.
    /// An IPv6 host is written in brackets, `[::]:8080` or `[::1]:8080` (`host` without them).
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard host.contains(":") else { return nil }
        } else if host.contains(":") {
            return nil  // an IPv6 address needs its brackets
        }
        guard !host.contains(where: { $0 == " " || $0 == "/" || $0 == "[" || $0 == "]" }) else { return nil }
        self.host = host.isEmpty ? "0.0.0.0" : host
        self.port = port
    }
}
