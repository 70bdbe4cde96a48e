import AMQP

/// The one duration grammar of the command line: whole numbers with a unit, one or more
/// (`90s`, `15m`, `36h`, `7d`, `2w`, `1h30m`), or a bare number of seconds (what the options
/// took before they took units). `D`, `H` and `S` are read as `d`, `h` and `s`; `M` is refused
/// (minutes or months?). Pure.
public enum DurationText {
    /// Seconds per unit.
    static let units: [Character: Int] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800]

    /// The whole seconds `text` says, nil when it is not a duration.
    public static func seconds(_ text: String) -> Int? {
        if let bare = Int(text) { return bare >= 0 ? bare : nil }
        var total = 0, number = "", sawUnit = false
        for character in text {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            let unit = character == "M" ? nil : units[Character(character.lowercased())]
            guard let unit, let value = Int(number), value <= Int.max / unit / 2 else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(value * unit)
            guard !overflow else { return nil }
            total = sum
            number = ""
            sawUnit = true
        }
        return number.isEmpty && sawUnit ? total : nil
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

extension ParsedArguments {
    /// The seconds of a `.seconds` option, nil when absent (the value was checked at parse).
    public func seconds(_ name: String) -> Int? { value(name).flatMap(DurationText.seconds) }

    /// The seconds of a `.seconds` option declared with a default: always present.
    public func requiredSeconds(_ name: String) -> Int {
        guard let seconds = seconds(name) else { preconditionFailure("\(spec.name): \(name) is not a duration option with a default") }
        return seconds
    }
}
