import Testing
@testable import PushCore

/// The scanner reads the common shape of a job straight from its bytes; whatever it accepts, the
/// full decoder (JSON tree + FieldReader) accepts as the same job, and everything else is left to
/// the full decoder, which words the issues.
@Suite(.timeLimit(.minutes(1))) struct SendJobScannerTests {
    static let commonJobs = [
        #"{"job_id":"j1","app_id":"shop-android","recipients":[{"token":"t1","mn_message_id":"mnid2m.1.2.3.4.5"}]}"#,
        #"{"schema_version":1,"job_id":"j2","app_id":"shop-ios","message_type":"notification","#
            + #""notification":{"title":"Ciao \"tu\"","body":"é😀\n","image":"https://img.example/a.png"},"#
            + #""data":{"k":"v","k2":"\u00e9"},"recipients":[{"token":"a","data":{"x":"1"}},{"token":"b"}],"#
            + #""validate_only":true,"not_after":"2026-12-01T10:00:00Z","campaign":"black-friday"}"#,
        #" { "job_id" : "j3" , "app_id" : "a" , "message_type" : "data" , "mn_message_id" : "mnid2m.9.9.9.9.9" , "#
            + #""recipients" : [ { "token" : "t" } ] , "notification" : { } , "data" : { } } "#,
    ]

    @Test func theCommonShapesAreScannedAsTheFullDecoderReadsThem() throws {
        for text in Self.commonJobs {
            let scanned = try #require(SendJobScanner.scan(Array(text.utf8)), "not scanned: \(text)")
            #expect(scanned == (try SendJob.decodeThroughTree(Array(text.utf8))), "\(text)")
            #expect(try SendJob.decode(Array(text.utf8)) == scanned)
        }
    }

    @Test(arguments: [
        #"{"job_id":"j","app_id":"a","topic":"news"}"#,
        #"{"job_id":"j","app_id":"a","recipients":[{"token":"t"}],"options":{"android":{"priority":"high"}}}"#,
        #"{"job_id":"j","app_id":"a","recipients":[{"token":"t"}],"future_field":1}"#,
        #"{"job_id":"j","app_id":"a","campaign":null,"recipients":[{"token":"t"}]}"#,
        #"{"schema_version":1.0,"job_id":"j","app_id":"a","recipients":[{"token":"t"}]}"#,
    ])
    func otherValidShapesAreLeftToTheFullDecoder(text: String) throws {
        // (A key twice is not a valid shape: every reader refuses it, ContractDecodingTests.)
        #expect(SendJobScanner.scan(Array(text.utf8)) == nil)
        _ = try SendJob.decode(Array(text.utf8))  // and the full decoder reads them
    }

    /// Thousands of mutations of valid jobs (fields dropped, repeated, nulled, retyped,
    /// lengthened past their limits, ids and app ids broken, unknown fields, broken JSON): the
    /// scanner never accepts what the full decoder refuses, and never reads a job differently.
    @Test func mutatedJobsAreScannedAsTheFullDecoderReadsThemOrLeftToIt() throws {
        var random = SeededGenerator(state: 7)
        let fields: [(String, [String])] = [
            ("schema_version", ["1", "2", "0", "1.0", "\"1\"", "null"]),
            ("job_id", [#""j""#, #""""#, "7", "null", "\"\(String(repeating: "x", count: 129))\"", "\"\(String(repeating: "é", count: 64))\""]),
            ("app_id", [#""shop-android""#, #""bad app""#, #""""#, "[]", #""\u0041pp""#]),
            ("message_type", [#""data""#, #""notification""#, #""other""#, #""""#, "true"]),
            ("notification", [#"{"title":"T"}"#, #"{"body":"B","image":"https://i.example/x.png"}"#, #"{"title":1}"#, #"{"x":"y"}"#, "{}", "null", "[]"]),
            ("data", [#"{"k":"v"}"#, #"{"k":1}"#, #"{"k":"v","k":"w"}"#, "{}", "[]", #"{"":"v"}"#]),
            ("recipients", [#"[{"token":"t"}]"#, #"[{"token":"t","mn_message_id":"mnid2m.1.1.1.1.1"},{"token":"u"}]"#,
                            "[]", #"[{"token":""}]"#, #"[{"mn_message_id":"mnid2m.1.1.1.1.1"}]"#, #"[{"token":"t","data":{"a":"b"}}]"#,
                            #"[{"token":"t","mn_message_id":"bad"}]"#, #"[{"token":"t"},]"#, "[1]", #"[{"token":"t","x":1}]"#]),
            ("mn_message_id", [#""mnid2m.1.2.3.4.5""#, #""mnid2m.x""#, "null"]),
            ("validate_only", ["true", "false", "0", "null"]),
            ("not_after", [#""2026-12-01T10:00:00Z""#, #""tomorrow""#, #""2026-12-01T10:00:00+01:00""#]),
            ("campaign", [#""c""#, "\"\(String(repeating: "c", count: 257))\"", "3"]),
            ("topic", [#""news""#]), ("options", [#"{"android":{}}"#]), ("unknown", ["1"]),
        ]
        let tails = ["", " ", "x", ",", "}"]
        var accepted = 0, agreed = 0
        for _ in 0..<4_000 {
            var members: [String] = []
            for (name, values) in fields {
                let required = ["job_id", "app_id", "recipients"].contains(name), rare = ["topic", "options", "unknown"].contains(name)
                guard required || Int.random(in: 0..<20, using: &random) < (rare ? 1 : 10) else { continue }
                // Mostly the first (valid) value, so that many documents are of the common shape.
                let value = Int.random(in: 0..<4, using: &random) < 3 ? values[0] : values[Int.random(in: 0..<values.count, using: &random)]
                members.append("\"\(name)\":\(value)")
                if Int.random(in: 0..<40, using: &random) == 0 { members.append("\"\(name)\":\(values[0])") }
            }
            members.shuffle(using: &random)
            var text = "{" + members.joined(separator: ",") + "}"
            if Int.random(in: 0..<20, using: &random) == 0 { text += tails[Int.random(in: 0..<tails.count, using: &random)] }
            var bytes = Array(text.utf8)
            if Int.random(in: 0..<50, using: &random) == 0, !bytes.isEmpty { bytes[Int.random(in: 0..<bytes.count, using: &random)] = 0xFF }
            let full = try? SendJob.decodeThroughTree(bytes)
            guard let scanned = SendJobScanner.scan(bytes) else {
                let decoded = try? SendJob.decode(bytes)
                #expect(decoded == full)
                continue
            }
            accepted += 1
            #expect(scanned == full, "\(text)")
            if scanned == full { agreed += 1 }
        }
        #expect(accepted > 300, "too few mutations of the common shape: \(accepted)")
        #expect(agreed == accepted)
    }
}
