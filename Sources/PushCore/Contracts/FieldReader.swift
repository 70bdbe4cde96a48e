/// Reads typed fields out of a JSON object while collecting issues, so that a decoder reports
/// every problem of a document at once with the field path named. Unknown fields are ignored.
struct FieldReader {
    let object: [String: JSONValue]
    let path: String
    private(set) var issues: [ContractIssue] = []

    init(_ object: [String: JSONValue], path: String) {
        self.object = object
        self.path = path
    }

    func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    mutating func report(_ issue: ContractIssue) { issues.append(issue) }
    mutating func report(contentsOf more: [ContractIssue]) { issues.append(contentsOf: more) }

    /// A required, non-empty string of at most `maxLength` UTF-8 bytes.
    mutating func requiredString(_ key: String, maxLength: Int = 4096, allowEmpty: Bool = false) -> String? {
        guard let value = object[key], value != .null else {
            report(ContractIssue(.missingField, field: fieldPath(key), "required field is missing"))
            return nil
        }
        return checkedString(key, value, maxLength: maxLength, allowEmpty: allowEmpty)
    }

    /// An optional string; nil when absent or null.
    mutating func optionalString(_ key: String, maxLength: Int = 4096) -> String? {
        guard let value = object[key], value != .null else { return nil }
        return checkedString(key, value, maxLength: maxLength, allowEmpty: true)
    }

    private mutating func checkedString(_ key: String, _ value: JSONValue, maxLength: Int, allowEmpty: Bool) -> String? {
        guard case .string(let s) = value else {
            report(ContractIssue(.wrongType, field: fieldPath(key), "must be a string, got \(value.kindDescription)"))
            return nil
        }
        if !allowEmpty && s.isEmpty {
            report(ContractIssue(.invalidValue, field: fieldPath(key), "must not be empty"))
            return nil
        }
        if s.utf8.count > maxLength {
            report(ContractIssue(.invalidValue, field: fieldPath(key), "longer than \(maxLength) bytes"))
            return nil
        }
        return s
    }

    mutating func optionalBool(_ key: String) -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard case .bool(let b) = value else {
            report(ContractIssue(.wrongType, field: fieldPath(key), "must be true or false, got \(value.kindDescription)"))
            return nil
        }
        return b
    }

    mutating func optionalObject(_ key: String) -> [String: JSONValue]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .object(let o) = value else {
            report(ContractIssue(.wrongType, field: fieldPath(key), "must be an object, got \(value.kindDescription)"))
            return nil
        }
        return o
    }

    mutating func optionalArray(_ key: String) -> [JSONValue]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .array(let a) = value else {
            report(ContractIssue(.wrongType, field: fieldPath(key), "must be an array, got \(value.kindDescription)"))
            return nil
        }
        return a
    }

    /// A string → string map (FCM `data`): other value kinds are refused, not stringified.
    mutating func optionalStringMap(_ key: String) -> [String: String]? {
        guard let members = optionalObject(key) else { return nil }
        var map: [String: String] = [:]
        for (name, value) in members {
            guard case .string(let s) = value else {
                report(ContractIssue(.dataValueNotString, field: "\(fieldPath(key)).\(name)",
                                     "data values must be strings, got \(value.kindDescription) (quote it)"))
                continue
            }
            map[name] = s
        }
        return map
    }

    /// The object elements of an array found at `path`, each with its index and element path
    /// (`path[i]`); elements of another kind are reported and left out.
    mutating func objectElements(_ list: [JSONValue], path: String) -> [(index: Int, path: String, object: [String: JSONValue])] {
        var elements: [(index: Int, path: String, object: [String: JSONValue])] = []
        elements.reserveCapacity(list.count)
        for (i, element) in list.enumerated() {
            let elementPath = "\(path)[\(i)]"
            guard case .object(let o) = element else {
                report(ContractIssue(.wrongType, field: elementPath, "must be an object, got \(element.kindDescription)"))
                continue
            }
            elements.append((i, elementPath, o))
        }
        return elements
    }

    /// The longest RFC 3339 timestamp read, in bytes.
    static let timestampMaxBytes = 64

    mutating func optionalTimestamp(_ key: String) -> Timestamp? {
        guard let text = optionalString(key, maxLength: Self.timestampMaxBytes) else { return nil }
        guard let t = Timestamp(rfc3339: text) else {
            report(ContractIssue(.invalidValue, field: fieldPath(key), "must be an RFC 3339 timestamp such as 2026-12-01T10:00:00Z"))
            return nil
        }
        return t
    }

    /// `schema_version`: absent means 1; a newer major version is refused by name.
    mutating func schemaVersion(supported: Int) {
        guard let value = object["schema_version"], value != .null else { return }
        guard let v = value.intValue else {
            report(ContractIssue(.wrongType, field: fieldPath("schema_version"), "must be an integer"))
            return
        }
        if v < 1 || v > supported {
            report(ContractIssue(.unsupportedVersion, field: fieldPath("schema_version"),
                                 "version \(v) is not supported (this build reads 1…\(supported))"))
        }
    }
}
