/// Text from outside (a job, a control record, a dead letter) made safe to print on one line of
/// a terminal or a log: C0 and C1 control characters, DEL, and the Unicode line separators and
/// direction overrides written as escapes (`\n`, `\u001b`, …); a backslash is doubled, so the
/// escapes are unambiguous.
public enum PrintableText {
    public static func escaped(_ text: some StringProtocol) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case _ where isControl(scalar):
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// True for what `escaped` writes as an escape, the backslash aside: C0 and C1 controls,
    /// DEL, the Unicode line separators and direction marks and overrides.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
