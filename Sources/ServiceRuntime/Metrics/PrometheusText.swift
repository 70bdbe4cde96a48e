/// The pieces of the Prometheus text exposition format 0.0.4 that need care: escaping of HELP
/// text and label values, and number formatting (`+Inf`, integers without a fraction).
package enum PrometheusText {
    /// The content type of `GET /metrics`.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A label value: backslash, double quote and line feed escaped.
    package static func escapeLabelValue(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// HELP text: backslash and line feed escaped.
    package static func escapeHelp(_ text: String) -> String {
        text.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
    }

    /// `{a="x",b="y"}`, or nothing without labels.
    package static func labels(_ names: [String], _ values: [String]) -> String {
        guard !names.isEmpty else { return "" }
        return "{" + zip(names, values).map { "\($0)=\"\(escapeLabelValue($1))\"" }.joined(separator: ",") + "}"
    }

    /// A sample value: whole numbers without a fraction, `+Inf` / `-Inf` / `NaN` spelled as Prometheus does.
    package static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Metric and label names: `[a-zA-Z_:][a-zA-Z0-9_:]*` (labels without `:`).
    package static func isValidName(_ name: String, allowColon: Bool = true) -> Bool {
        guard let first = name.utf8.first else { return false }
        func letter(_ c: UInt8) -> Bool { (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || c == 0x5F || (allowColon && c == 0x3A) }
        return letter(first) && name.utf8.allSatisfy { letter($0) || ($0 >= 0x30 && $0 <= 0x39) }
    }
}
