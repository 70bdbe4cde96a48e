/// A small strict JSON parser (RFC 8259) over UTF-8 bytes producing `JSONValue`.
struct JSONParser {
    /// Why a text is not JSON, with the byte offset.
    struct ParseError: Error, Equatable {
        let offset: Int
        let reason: String
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    private static let maxDepth = 100

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses a complete JSON text.
    static func parse(_ bytes: [UInt8]) throws(ParseError) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.fail("unexpected trailing characters") }
        return value
    }

    static func parse(_ text: String) throws(ParseError) -> JSONValue { try parse(Array(text.utf8)) }

    private func fail(_ reason: String) -> ParseError { ParseError(offset: index, reason: reason) }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(ParseError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(ParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let start = literal.utf8Start
        for i in 0..<count where bytes[index + i] != start[i] { throw fail("invalid literal") }
        index += count
    }

    private mutating func parseObject() throws(ParseError) -> JSONValue {
        depth += 1
        guard depth <= JSONParser.maxDepth else { throw fail("nesting too deep") }
        defer { depth -= 1 }
        index += 1
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            members.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func parseArray() throws(ParseError) -> JSONValue {
        depth += 1
        guard depth <= JSONParser.maxDepth else { throw fail("nesting too deep") }
        defer { depth -= 1 }
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func parseNumber() throws(ParseError) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
        if bytes[index] == UInt8(ascii: "0") { index += 1 } else { while index < bytes.count, isDigit(bytes[index]) { index += 1 } }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return .number(String(decoding: bytes[start..<index], as: UTF8.self))
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    private mutating func parseString() throws(ParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes; ASCII needs no UTF-8 validation.
        var ascii = true
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let s = ascii ? String(decoding: bytes[start..<index], as: UTF8.self)
                              : String(validating: bytes[start..<index], as: UTF8.self)
                index += 1
                guard let s else { throw fail("invalid UTF-8") }
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw fail("control character in string") }
            if b >= 0x80 { ascii = false }
            index += 1
        }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
                return s
            }
            if b < 0x20 { throw fail("control character in string") }
            if b != UInt8(ascii: "\\") { out.append(b); index += 1; continue }
            index += 1
            guard index < bytes.count else { break }
            let e = bytes[index]
            index += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate")
                    }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw fail("unpaired surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    private mutating func parseHex4() throws(ParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("invalid escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let d: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - UInt8(ascii: "A") + 10)
            default: throw fail("invalid escape")
            }
            v = v * 16 + d
            index += 1
        }
        return v
    }
}
