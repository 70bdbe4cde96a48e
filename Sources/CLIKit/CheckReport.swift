import FoundationEssentials
import ServiceRuntime

/// What `--check` prints: every option with its value and where it came from (secrets
/// redacted), and the checks files get beyond existing (CA bundles hold certificates).
package enum CheckReport {
    /// One line per option that has a value: `  --prefetch            100   (default)`.
    package static func optionLines(_ a: ParsedArguments) -> [String] {
        var lines: [String] = []
        if let file = a.settingsFile { lines.append("  settings file: \(file)") }
        for option in a.spec.options where option.id != .settings && option.id != .check {
            guard let source = a.source(of: option.id) else { continue }
            let shown: String
            if option.arity == .flag {
                guard a.has(option.id) else { continue }
                shown = "on"
            } else {
                shown = a.all(option.id).map { option.isSecret ? redact($0) : $0 }.joined(separator: ",")
            }
            lines.append("  " + option.name.padding(to: 26) + shown.padding(to: 34) + "(\(source.rawValue))")
        }
        return lines
    }

    /// A connection string with its secrets masked (`amqp://user:***@host/`, `?password=***`);
    /// other text unchanged.
    package static func redact(_ value: String) -> String { SecretRedaction.redact(value) }

    /// Nil when `path` (if given) is a PEM bundle with at least one certificate, else why not.
    package static func caFileProblem(_ path: String?, option: OptionKey, command: String) -> String? {
        guard let path else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { return "\(command): \(option) \(path): cannot be read" }
        return String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----")
            ? nil : "\(command): \(option) \(path): no PEM certificate in it"
    }
}
