import Testing
@testable import PushCore

/// The JSON parser and writer.
@Suite(.timeLimit(.minutes(1))) struct JSONTests {
    @Test func parsesEveryKindAndKeepsBooleansApartFromNumbers() throws {
        let v = try JSONValue.parse(#"{"a":[1,-2.5,true,false,null,"s\n\u00e8\ud83d\ude00"],"b":{},"c":1e3}"#)
        #expect(v == ["a": [1, -2.5, true, false, nil, "s\nè😀"], "b": [:], "c": 1000.0])
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\":1,}", "tru", "01", "1.", "\"\u{01}\"", "{\"a\" 1}", "[1] x", "\"\\ud800\"", "NaN"])
    func refusesMalformedDocuments(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    /// Stray bytes, an overlong "/", an encoded surrogate, a cut sequence: after ASCII or not,
    /// with or without an escape in the string.
    @Test(arguments: [[0xFF, 0xFE], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0x61, 0xE2, 0x82],
                      [0x5C, 0x6E, 0xFF], [0xC3, 0xA9, 0xC3]] as [[UInt8]])
    func refusesInvalidUTF8(inside: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22] + inside + [0x22]) }
    }

    @Test func readsStringsOfASCIIMultiByteAndEscapedText() throws {
        let text = #"["plain","é€😀","a\"b\u00e9","ünï\ncode"]"#
        #expect(try JSONValue.parse(text) == .array(["plain", "é€😀", "a\"bé", "ünï\ncode"]))
    }

    @Test func refusesNestingBeyondTheLimit() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(deep) }
        #expect(throws: Never.self) { try JSONValue.parse(deep, maxDepth: 200) }
    }

    @Test func writerSortsKeysEscapesAndRoundTrips() throws {
        let v: JSONValue = ["b": "q\"\\\u{01}\t", "a": [1, 2.5, true, nil], "è": "ü"]
        let text = v.encodedString()
        #expect(text == #"{"a":[1,2.5,true,null],"b":"q\"\\\u0001\t","è":"ü"}"#)
        #expect(try JSONValue.parse(text) == v)
        #expect(try JSONValue.parse(v.encodedString(.pretty)) == v)
    }

    @Test func escapesAtEitherEndAndInRunsAreWrittenAsJSONRequires() throws {
        #expect(JSONValue.string("\"").encodedString() == #""\"""#)
        #expect(JSONValue.string("\\a\n\n").encodedString() == #""\\a\n\n""#)
        #expect(JSONValue.string("é\u{1F}x\u{7F}").encodedString() == "\"é\\u001fx\u{7F}\"")
        let controls = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        #expect(JSONValue.string(controls).encodedString()
                == #""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f""#)
        for text in ["", "plain", "\"x\"", "a\\", "\u{0}end", "mixé\t😀\"\\"] {
            #expect(try JSONValue.parse(JSONValue.string(text).encodedString()) == .string(text), "\(text)")
        }
    }

    @Test func integralDoublesStayDoublesThroughTheWriter() throws {
        // Found by fuzz/run.sh: -1E11 was written as an integer and read back as one.
        let v = try JSONValue.parse("[-1E11, 3.0, 2]")
        #expect(v.encodedString() == "[-100000000000.0,3.0,2]")
        #expect(try JSONValue.parse(v.encodedString()) == v)
    }

    @Test func timestampsParseAndPrintRFC3339() {
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.secondsSince1970 == 0)
        #expect(Timestamp(rfc3339: "2026-11-29T21:00:00Z")?.description == "2026-11-29T21:00:00Z")
        #expect(Timestamp(rfc3339: "2026-11-29T23:00:00+02:00")?.description == "2026-11-29T21:00:00Z")
        #expect(Timestamp(rfc3339: "2000-02-29T12:30:15.250Z")?.secondsSince1970 == 951_827_415.25)
        #expect(Timestamp(rfc3339: "2026-13-01T00:00:00Z") == nil)
        #expect(Timestamp(rfc3339: "2026-11-29") == nil)
    }
}
