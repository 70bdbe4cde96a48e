/// A parsed JSON value that keeps object members in their original order, so that the emulator
/// can measure the compact encoding of a message exactly as FCM would.
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number's original text (JSON numbers are kept verbatim).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The member named `key` of an object (the last one, like most parsers), or nil.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.0 == key })?.1
    }

    var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    var objectMembers: [(String, JSONValue)]? { if case .object(let m) = self { return m } else { return nil } }

    /// A short name of the JSON type, for error messages.
    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "bool"
        case .number: return "number"
        case .string: return "string"
        case .array: return "list"
        case .object: return "object"
        }
    }

    /// Compact encoding (no whitespace, `/` not escaped), as UTF-8 bytes.
    func compactEncoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        encode(into: &out)
        return out
    }

    /// Compact encoding as a String.
    func compactText() -> String { String(decoding: compactEncoded(), as: UTF8.self) }

    func encode(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): JSONValue.encodeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.encode(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.encodeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                value.encode(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func encodeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = s
        text.withUTF8 { bytes in
            // Fast path: nothing to escape (the common case) is copied in one go.
            if !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes { appendEscaped(byte, into: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func appendEscaped(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
        case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
        case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
        case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
        case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
        case 0x08: out.append(contentsOf: [92, UInt8(ascii: "b")])
        case 0x0C: out.append(contentsOf: [92, UInt8(ascii: "f")])
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        default: out.append(byte)
        }
    }

    /// JSON text of a string value (quoted and escaped).
    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        encodeString(s, into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
