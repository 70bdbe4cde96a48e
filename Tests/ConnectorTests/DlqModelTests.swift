import AMQP
@testable import DeadLetterTools
import Foundation
import PushCore
import Testing
@testable import Connector

/// The pure DLQ model: entries, filters, stats, replay headers and the export line format.
@Suite(.timeLimit(.minutes(1))) struct DlqModelTests {
    static let now = Timestamp(rfc3339: "2026-11-29T12:00:00Z")!

    static func workerHeaders(code: String = "UNKNOWN_APP", last: String = "2026-11-29T11:00:00Z", replays: Int64 = 0) -> AMQPTable {
        [DeadLetterHeader.code: .string(code), DeadLetterHeader.message: "unknown App ID",
         DeadLetterHeader.attempts: 3, DeadLetterHeader.firstFailedAt: "2026-11-29T10:00:00Z",
         DeadLetterHeader.lastFailedAt: .string(last), DeadLetterHeader.replays: .int(replays)]
    }

    @Test func entryReadsJobFieldsAndWorkerHeaders() {
        let body = Data(jobJSON("j1", tokens: ["a", "b"], app: "shop-ios", extra: #","campaign":"SUMMER""#).utf8)
        let e = DeadLetterEntry(body: body, headers: Self.workerHeaders(replays: 2))
        #expect(e.jobID == "j1" && e.appID == "shop-ios" && e.campaign == "SUMMER")
        #expect(e.code == "UNKNOWN_APP" && e.attempts == 3 && e.replays == 2 && e.targets == 2)
        #expect(e.firstFailedAt == Timestamp(rfc3339: "2026-11-29T10:00:00Z"))
        #expect(e.age(at: Self.now) == 3600)
    }

    @Test func entryOfAGarbageBodyHasNoJobButKeepsItsCode() {
        let e = DeadLetterEntry(body: Data([0xFF, 0x00, 0x7B]), headers: Self.workerHeaders(code: "INVALID_JOB"))
        #expect(e.jobID == nil && e.appID == nil && e.targets == nil)
        #expect(e.code == "INVALID_JOB" && e.bodyBytes == 3)
    }

    @Test func messageDeadLetteredByRabbitMQShowsDeliveryLimit() {
        let death: AMQPFieldValue = .table(["reason": "delivery_limit", "queue": "push.jobs", "count": 1,
                                           "time": .timestamp(Date(timeIntervalSince1970: Self.now.secondsSince1970 - 7200))])
        let e = DeadLetterEntry(body: Data(jobJSON("loop", tokens: ["t"]).utf8),
                                headers: ["x-death": .array([death]), "x-first-death-reason": "delivery_limit", "x-delivery-count": 21])
        #expect(e.code == DeadLetterEntry.deliveryLimitCode)
        #expect(e.jobID == "loop" && e.replays == 0 && e.attempts == 21)
        #expect(e.age(at: Self.now) == 7200)
        #expect(e.message?.contains("push.jobs") == true)
        let bare = DeadLetterEntry(body: Data("{}".utf8), headers: [:])
        #expect(bare.code == DeadLetterEntry.unknownCode && bare.lastFailedAt == nil)
    }

    @Test func durationsParseUnitsAndSumsAndRefuseTheRest() {
        #expect(DeadLetterFilter.parseDuration("30m") == 1800)
        #expect(DeadLetterFilter.parseDuration("2h") == 7200)
        #expect(DeadLetterFilter.parseDuration("7d") == 604_800)
        #expect(DeadLetterFilter.parseDuration("1h30m") == 5400)
        #expect(DeadLetterFilter.parseDuration("45s") == 45)
        #expect(DeadLetterFilter.parseDuration("30") == 30, "bare seconds, as the other duration options take")
        for bad in ["", "m", "2x", "-1h", "0m", "1.5h", "h2", "2M"] { #expect(DeadLetterFilter.parseDuration(bad) == nil, "\(bad)") }
    }

    @Test func filterCombinesFieldsWithAndAndValuesWithOr() {
        let e = DeadLetterEntry(body: Data(jobJSON("j1", tokens: ["a"], app: "a1", extra: #","campaign":"C""#).utf8),
                                headers: Self.workerHeaders())  // last failure 1 h ago
        #expect(DeadLetterFilter().matches(e, now: Self.now))
        #expect(DeadLetterFilter(appIDs: ["a1", "a2"]).matches(e, now: Self.now))
        #expect(!DeadLetterFilter(appIDs: ["a2"]).matches(e, now: Self.now))
        #expect(DeadLetterFilter(appIDs: ["a1"], codes: ["UNKNOWN_APP"]).matches(e, now: Self.now))
        #expect(!DeadLetterFilter(appIDs: ["a1"], codes: ["AUTH_FAILED"]).matches(e, now: Self.now))
        #expect(DeadLetterFilter(jobIDs: ["j1"], campaigns: ["C"]).matches(e, now: Self.now))
        #expect(!DeadLetterFilter(campaigns: ["D"]).matches(e, now: Self.now))
        #expect(DeadLetterFilter(olderThan: 1800).matches(e, now: Self.now))
        #expect(!DeadLetterFilter(olderThan: 7200).matches(e, now: Self.now))
        #expect(DeadLetterFilter(newerThan: 7200).matches(e, now: Self.now))
        #expect(!DeadLetterFilter(newerThan: 1800).matches(e, now: Self.now))
        let timeless = DeadLetterEntry(body: Data(), headers: [:])
        #expect(!DeadLetterFilter(olderThan: 1).matches(timeless, now: Self.now))
        #expect(!DeadLetterFilter(newerThan: 1).matches(timeless, now: Self.now))
        #expect(!DeadLetterFilter(appIDs: ["a1"]).matches(timeless, now: Self.now))
    }

    @Test func statsCountByCodeAppAndAgeBucket() {
        var stats = DeadLetterStats(now: Self.now)
        let ages = ["2026-11-29T11:30:00Z", "2026-11-29T01:00:00Z", "2026-11-26T12:00:00Z", "2026-11-01T12:00:00Z"]
        for (i, last) in ages.enumerated() {
            stats.add(DeadLetterEntry(body: Data(jobJSON("j\(i)", tokens: ["t"], app: i < 2 ? "a" : "b").utf8),
                                      headers: Self.workerHeaders(code: i == 0 ? "AUTH_FAILED" : "UNKNOWN_APP", last: last)))
        }
        stats.add(DeadLetterEntry(body: Data([0xFF]), headers: [:]))
        #expect(stats.total == 5)
        #expect(stats.byCode == ["AUTH_FAILED": 1, "UNKNOWN_APP": 3, "UNKNOWN": 1])
        #expect(stats.byApp == ["a": 2, "b": 2, DeadLetterStats.noApp: 1])
        #expect(stats.byAge == [.underAnHour: 1, .upToADay: 1, .upToAWeek: 1, .overAWeek: 1, .unknown: 1])
        #expect(stats.oldest == Timestamp(rfc3339: "2026-11-01T12:00:00Z"))
        #expect(stats.newest == Timestamp(rfc3339: "2026-11-29T11:30:00Z"))
        let json = stats.json(queue: "q")
        #expect(json["by_age"]?["<1h"] == .int(1) && json["total"] == .int(5))
        #expect(stats.lines(queue: "q").first?.hasPrefix("5 dead letter(s) in q") == true)
    }

    @Test func replayRaisesReplaysAndDropsAttemptFailureAndBrokerHeaders() {
        var headers = Self.workerHeaders(replays: 1)
        headers[DeadLetterHeader.retryAttempt] = 4
        headers["x-death"] = .array([])
        headers["x-delivery-count"] = 2
        headers["trace-id"] = "abc"
        let replayed = ReplayPolicy.replayHeaders(headers, replays: 1)
        #expect(replayed == [DeadLetterHeader.replays: 2, DeadLetterHeader.copy: "replay", "trace-id": "abc"])
        let policy = ReplayPolicy(maxReplays: 2)
        #expect(policy.allows(DeadLetterEntry(code: "X", replays: 1)))
        #expect(!policy.allows(DeadLetterEntry(code: "X", replays: 2)))
        #expect(ReplayPolicy(maxReplays: 2, force: true).allows(DeadLetterEntry(code: "X", replays: 9)))
    }

    @Test func exportLineRoundTripsBodiesPropertiesAndTypedHeaders() throws {
        let headers: AMQPTable = [
            "s": "text é", "i": -7, "b": true, "d": .double(2.0), "half": .double(0.5), "nan": .double(.infinity),
            "ts": .timestamp(Date(timeIntervalSince1970: 1_700_000_000)), "raw": .bytes(Data([0, 0xFF, 0x10])),
            "table": .table(["inner": .array([1, "two", .table(["deep": false])])]), "nothing": .void,
        ]
        let properties = MessageProperties(contentType: "application/json", contentEncoding: "identity", headers: headers,
                                           persistent: true, priority: 3, correlationID: "c", replyTo: "r", expiration: "60000",
                                           messageID: "m", timestamp: Date(timeIntervalSince1970: 1_700_000_001), type: "t", appID: "a")
        let bodies = [Data(#"{"job_id":"j","text":"caffè \u00e9 ☕","n":1.50}"#.utf8), Data([0xC3, 0x28, 0x00, 0xFF]),
                      Data("not json but utf8".utf8), Data()]
        for body in bodies {
            let record = DeadLetterRecord(body: body, properties: properties)
            let line = record.line
            #expect(!line.contains("\n"))
            let back = try DeadLetterRecord.decode(line: Array(line.utf8))
            #expect(back.body == body)
            #expect(back.properties == properties)
        }
        #expect(DeadLetterRecord(body: bodies[0], properties: properties).json["body_encoding"] == "utf8")
        #expect(DeadLetterRecord(body: bodies[1], properties: properties).json["body_encoding"] == "base64")
        var counted = properties
        counted.headers["x-delivery-count"] = 3
        #expect(DeadLetterRecord(body: Data(), properties: counted).properties.headers["x-delivery-count"] == nil)
    }

    @Test func importRefusesLinesThatAreNotExportLines() {
        for bad in ["{}", "[1]", #"{"format":"push-connector-dlq/1","body":"x","body_encoding":"hex"}"#,
                    #"{"format":"push-connector-dlq/1","body":"%%","body_encoding":"base64"}"#,
                    #"{"format":"push-connector-dlq/1","body":"x","body_encoding":"utf8","headers":{"h":{"type":"int","value":"1"}}}"#] {
            #expect(throws: DeadLetterRecord.DecodingError.self) { try DeadLetterRecord.decode(line: Array(bad.utf8)) }
        }
    }
}

/// The v1 export format, pinned by lines written by hand from docs/operations.md (never by the
/// encoder): a format change that breaks files already exported turns these red.
@Suite struct DlqExportFormatV1Tests {
    @Test func aHandWrittenV1LineDecodesFieldByField() throws {
        let line = #"{"format":"push-connector-dlq/1","body_encoding":"utf8","body":"{\"job_id\":\"j1\",\"app_id\":\"shop-ios\"}","#
            + #""properties":{"content_type":"application/json","delivery_mode":2,"priority":4,"correlation_id":"c-1","#
            + #""reply_to":"r","expiration":"60000","message_id":"m-1","timestamp":1764000000,"type":"job","app_id":"crm"},"#
            + #""headers":{"push-error-code":{"type":"string","value":"UNKNOWN_APP"},"push-replays":{"type":"int","value":0},"#
            + #""flag":{"type":"bool","value":true},"ratio":{"type":"double","value":0.25},"raw":{"type":"bytes","value":"AAH+"},"#
            + #""when":{"type":"timestamp","value":1764000001},"nothing":{"type":"void","value":null},"#
            + #""x-death":{"type":"array","value":[{"type":"table","value":{"reason":{"type":"string","value":"delivery_limit"},"#
            + #""count":{"type":"int","value":20}}}]}}}"#
        let record = try DeadLetterRecord.decode(line: Array(line.utf8))
        #expect(record.body == Data(#"{"job_id":"j1","app_id":"shop-ios"}"#.utf8))
        let p = record.properties
        #expect(p.contentType == "application/json" && p.persistent && p.priority == 4)
        #expect(p.correlationID == "c-1" && p.replyTo == "r" && p.expiration == "60000" && p.messageID == "m-1")
        #expect(p.timestamp == Date(timeIntervalSince1970: 1_764_000_000) && p.type == "job" && p.appID == "crm")
        #expect(p.contentEncoding == nil)
        #expect(p.headers == [
            "push-error-code": .string("UNKNOWN_APP"), "push-replays": .int(0), "flag": .bool(true), "ratio": .double(0.25),
            "raw": .bytes(Data([0x00, 0x01, 0xFE])), "when": .timestamp(Date(timeIntervalSince1970: 1_764_000_001)), "nothing": .void,
            "x-death": .array([.table(["reason": .string("delivery_limit"), "count": .int(20)])]),
        ])
    }

    @Test func aHandWrittenBase64LineKeepsTheBodyByteForByte() throws {
        let line = #"{"format":"push-connector-dlq/1","body_encoding":"base64","body":"/wDDKHsK","properties":{"delivery_mode":1},"headers":{}}"#
        let record = try DeadLetterRecord.decode(line: Array(line.utf8))
        #expect(record.body == Data([0xFF, 0x00, 0xC3, 0x28, 0x7B, 0x0A]))
        #expect(record.properties == MessageProperties(persistent: false))
    }

    @Test func listRowsEscapeControlCharactersAndTerminalEscapes() {
        let entry = DeadLetterEntry(jobID: "j\u{1b}[31mred", appID: "a\nb", code: "X\u{1b}[2J\r\nY\\", lastFailedAt: nil)
        let row = DlqOptions.row(entry)
        #expect(!row.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
        #expect(row.hasPrefix(#"j\u001b[31mred"#))
        #expect(row.contains(#"a\nb "#) && row.contains(#"X\u001b[2J\r\nY\\ "#))
        #expect(DlqOptions.printable("ok \u{202E}evil\u{85}") == #"ok \u202eevil\u0085"#)
    }

    @Test func aLongValueIsCutToItsColumnInTheTable() {
        let long = String(repeating: "j", count: 10_000)
        let row = DlqOptions.row(DeadLetterEntry(jobID: long, appID: String(repeating: "a", count: 40), code: "UNKNOWN_APP", lastFailedAt: nil))
        #expect(row.count == DlqOptions.listHeader.count - "RECIPIENTS".count + 1, "\(row.count) characters")
        #expect(row.hasPrefix(String(repeating: "j", count: 36) + "… " + String(repeating: "a", count: 16) + "… UNKNOWN_APP"))
        let short = DlqOptions.row(DeadLetterEntry(jobID: "j1", appID: "a", code: "X", lastFailedAt: nil))
        #expect(short.hasPrefix("j1" + String(repeating: " ", count: 36) + "a "))
    }
}
