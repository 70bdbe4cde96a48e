/// How a `JSONValue` is written: compact (wire format) or indented (for people).
public enum JSONStyle: Sendable {
    /// No whitespace at all: what goes on the wire and what the size limits count.
    case compact
    /// Two-space indentation, one member per line.
    case pretty
}

extension JSONValue {
    /// The UTF-8 encoding of this value, keys sorted so that equal values encode equally.
    public func encodedBytes(_ style: JSONStyle = .compact) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out, style: style, indent: 0)
        return out
    }

    /// The encoding as a string.
    public func encodedString(_ style: JSONStyle = .compact) -> String {
        String(decoding: encodedBytes(style), as: UTF8.self)
    }

    func write(to out: inout [UInt8], style: JSONStyle, indent: Int) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            // A double stays a double: integral values keep a ".0" so they read back as doubles.
            if d.rounded() == d && abs(d) < 1e15 { out.append(contentsOf: (String(Int64(d)) + ".0").utf8) }
            else { out.append(contentsOf: d.description.utf8) }
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let elements):
            if elements.isEmpty { out.append(contentsOf: "[]".utf8); return }
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.newline(&out, style: style, indent: indent + 1)
                element.write(to: &out, style: style, indent: indent + 1)
            }
            JSONValue.newline(&out, style: style, indent: indent)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            if members.isEmpty { out.append(contentsOf: "{}".utf8); return }
            out.append(UInt8(ascii: "{"))
            for (i, key) in members.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.newline(&out, style: style, indent: indent + 1)
                JSONValue.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                if case .pretty = style { out.append(UInt8(ascii: " ")) }
                members[key]!.write(to: &out, style: style, indent: indent + 1)
            }
            JSONValue.newline(&out, style: style, indent: indent)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ out: inout [UInt8], style: JSONStyle, indent: Int) {
        guard case .pretty = style else { return }
        out.append(0x0A)
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `s` as a JSON string literal. Runs of bytes that need no escape are copied whole.
    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                writeEscaped(byte, to: &out)
                start = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscaped(_ byte: UInt8, to out: inout [UInt8]) {
        switch byte {
        case 0x22: out.append(0x5C); out.append(0x22)
        case 0x5C: out.append(0x5C); out.append(0x5C)
        case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
        case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
        case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
        default:
            out.append(contentsOf: "\\u00".utf8)
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0xF)])
        }
    }
}
