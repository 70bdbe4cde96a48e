import AMQP

/// The one duration grammar of the command line: whole numbers with a unit, one or more
/// (`90s`, `15m`, `36h`, `7d`, `2w`, `1h30m`, `50ms`), or a bare number of seconds (what the
/// options took before they took units; deprecated). `D`, `H` and `S` are read as `d`, `h` and
/// `s`; `M` is refused (minutes or months?). Pure.
public enum DurationText {
    /// Milliseconds per unit (`ms` is read before `m`).
    static let units: [String: Int] = ["ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000]

    /// The whole seconds `text` says, nil when it is not a duration of whole seconds.
    public static func seconds(_ text: String) -> Int? {
        guard let milliseconds = milliseconds(text), milliseconds % 1_000 == 0 else { return nil }
        return milliseconds / 1_000
    }

    /// The milliseconds `text` says (`50ms`, `1s`, `1s500ms`, a bare number of seconds), nil
    /// when it is not a duration.
    public static func milliseconds(_ text: String) -> Int? {
        if let bare = Int(text) {
            guard bare >= 0, bare <= Int.max / 2_000 else { return nil }
            return bare * 1_000
        }
        var total = 0, sawUnit = false
        var rest = Substring(text)
        while !rest.isEmpty {
            let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
            rest = rest.dropFirst(digits.count)
            let letters = rest.prefix(while: { $0.isASCII && $0.isLetter })
            rest = rest.dropFirst(letters.count)
            // `M` alone is refused: minutes or months?
            let unit = letters == "M" ? nil : units[letters.lowercased()]
            guard let unit, let value = Int(digits), value <= Int.max / unit / 2 else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(value * unit)
            guard !overflow else { return nil }
            total = sum
            sawUnit = true
        }
        return sawUnit ? total : nil
    }

    /// The `x-max-age` RabbitMQ reads (`7D`, `36h`, `90s`) for `text`: RabbitMQ's own syntax as
    /// it is (`Y`, `M` months, `D`, `h`, `m`, `s`), else this grammar in the largest unit that
    /// divides it, so that `7d` declares what `7D` did (a stream declared with another value is
    /// refused by RabbitMQ).
    public static func maxAge(_ text: String) -> String? {
        if Topology.ResultsRetention.isValidMaxAge(text) { return text }
        guard let seconds = seconds(text), seconds > 0 else { return nil }
        if seconds % 86_400 == 0 { return "\(seconds / 86_400)D" }
        if seconds % 3_600 == 0 { return "\(seconds / 3_600)h" }
        if seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }
}

extension ValueKind {
    /// A duration (`DurationText`) of whole seconds within `range`.
    public static func seconds(_ range: ClosedRange<Int>) -> ValueKind {
        ValueKind { text in
            guard let seconds = DurationText.seconds(text), range.contains(seconds) else {
                return "must be a duration such as 90s, 15m, 2h or 7d (or whole seconds) from \(range.lowerBound) s to \(range.upperBound) s"
            }
            return nil
        }
    }
}

extension ValueKind {
    /// A duration (`DurationText`) within `range` milliseconds: `50ms`, `1s`.
    public static func milliseconds(_ range: ClosedRange<Int>) -> ValueKind {
        ValueKind { text in
            guard let milliseconds = DurationText.milliseconds(text), range.contains(milliseconds) else {
                return "must be a duration such as 50ms or 2s from \(range.lowerBound) ms to \(range.upperBound) ms"
            }
            return nil
        }
    }
}

extension ParsedArguments {
    /// The seconds of a `.seconds` option, nil when absent (the value was checked at parse).
    public func seconds(_ name: OptionKey) -> Int? { self[name].flatMap(DurationText.seconds) }

    /// The milliseconds of a `.milliseconds` option declared with a default: always present.
    public func requiredMilliseconds(_ name: OptionKey) -> Int {
        guard let milliseconds = self[name].flatMap(DurationText.milliseconds) else {
            preconditionFailure("\(spec.name): \(name) is not a duration option with a default")
        }
        return milliseconds
    }

    /// The seconds of a `.seconds` option declared with a default: always present.
    public func requiredSeconds(_ name: OptionKey) -> Int {
        guard let seconds = seconds(name) else { preconditionFailure("\(spec.name): \(name) is not a duration option with a default") }
        return seconds
    }
}
