/// Rules for the identifiers the connector routes and addresses by: `app_id` (a word of AMQP
/// routing keys such as `<app_id>.invalid_token`) and the Firebase `project_id` (a path segment
/// of FCM's send URL).
public enum IdentifierRules {
    /// Why `appID` cannot be an App ID, nil when it can. An App ID must not contain `.` (the
    /// routing-key word separator), `*` or `#` (wildcards of topic bindings), whitespace or
    /// control characters.
    public static func appIDProblem(_ appID: String) -> String? {
        guard !appID.isEmpty else { return "must not be empty" }
        for scalar in appID.unicodeScalars {
            switch scalar {
            case ".", "*", "#":
                return "must not contain '\(scalar)': app_id is a word of routing keys such as \"<app_id>.invalid_token\" "
                    + "(use '-' or '_' instead, e.g. \"\(suggestion(appID))\")"
            default:
                // ASCII is decided without the Unicode tables: its whitespace and controls are
                // U+0000…U+0020 and U+007F.
                let bad = scalar.isASCII ? scalar.value <= 0x20 || scalar.value == 0x7F
                    : scalar.properties.isWhitespace || (0x7F...0x9F).contains(scalar.value)
                if bad {
                    return "must not contain whitespace or control characters (found U+\(String(scalar.value, radix: 16, uppercase: true)))"
                }
            }
        }
        return nil
    }

    /// The issue for an `app_id` at `field`, nil when it is valid.
    public static func appIDIssue(_ appID: String, field: String) -> ContractIssue? {
        appIDProblem(appID).map { ContractIssue(.appID, field: field, "app_id \"\(printable(appID))\" \($0)") }
    }

    /// Why `projectID` cannot be a Google Cloud / Firebase project id, nil when it can.
    ///
    /// Google's rule: 6 to 30 characters, lower-case ASCII letters, digits and hyphens, starting
    /// with a letter and not ending with a hyphen. Legacy domain-scoped ids (`example.com:my-project`)
    /// are accepted too: a lower-case DNS name, `:`, then an id that follows the same rule.
    public static func projectIDProblem(_ projectID: String) -> String? {
        let parts = projectID.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            guard isDomain(parts[0]) else { return "has a domain prefix that is not a lower-case DNS name (\"example.com:my-project\")" }
            return plainProjectIDProblem(parts[1]).map { "after the domain prefix, \($0)" }
        }
        return plainProjectIDProblem(Substring(projectID))
    }

    /// The issue for a `project_id` at `field`, nil when it is valid.
    public static func projectIDIssue(_ projectID: String, field: String) -> ContractIssue? {
        projectIDProblem(projectID).map { ContractIssue(.projectID, field: field, "project_id \"\(printable(projectID))\" \($0)") }
    }

    private static func plainProjectIDProblem(_ id: Substring) -> String? {
        let bytes = Array(id.utf8)
        guard (6...30).contains(bytes.count) else { return "must be 6 to 30 characters long (got \(bytes.count))" }
        guard isLowerLetter(bytes[0]) else { return "must start with a lower-case letter" }
        guard bytes.allSatisfy({ isLowerLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") }) else {
            return "may contain only lower-case letters, digits and hyphens"
        }
        guard bytes.last != UInt8(ascii: "-") else { return "must not end with a hyphen" }
        return nil
    }

    private static func isDomain(_ text: Substring) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, text.utf8.count <= 253 else { return false }
        return labels.allSatisfy { label in
            let bytes = Array(label.utf8)
            return (1...63).contains(bytes.count) && bytes.first != UInt8(ascii: "-") && bytes.last != UInt8(ascii: "-")
                && bytes.allSatisfy { isLowerLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") }
        }
    }

    private static func isLowerLetter(_ b: UInt8) -> Bool { b >= 0x61 && b <= 0x7A }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    private static func suggestion(_ appID: String) -> String {
        String(appID.map { $0 == "." || $0 == "*" || $0 == "#" ? "-" : $0 })
    }

    /// The id as shown in a message: control characters escaped, at most 80 characters.
    private static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(80) {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
