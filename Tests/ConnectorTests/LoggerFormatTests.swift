import Foundation
import PushCore
@testable import ServiceRuntime
import Synchronization
import Testing
@testable import Connector

/// Log lines in both formats: millisecond UTC timestamps, fields kept, one line per entry.
@Suite struct LoggerFormatTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func sink() -> @Sendable (String) -> Void { { line in self.lines.withLock { $0.append(line) } } }
    }

    /// `2026-11-29T21:00:00.123Z`.
    static func isMillisecondStamp(_ text: String) -> Bool {
        text.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil
    }

    @Test func jsonLinesParseAndCarryTheContextAndCallFields() throws {
        let lines = Lines()
        let log = Logger(component: "worker", format: .json, sink: lines.sink()).child("lane0")
            .with([("job_id", "j-1"), ("app_id", "shop"), ("attempt", "2")])
        log.warning("job dead-lettered", ["code": "INVALID_JOB", "reason": "line one\nline \"two\""])
        let line = try #require(lines.all.first)
        #expect(!line.contains("\n"))
        let json = try JSONValue.parse(Array(line.utf8))
        #expect(json["msg"] == .string("job dead-lettered"))
        #expect(json["level"] == .string("warn"))
        #expect(json["component"] == .string("worker.lane0"))
        #expect(json["job_id"] == .string("j-1") && json["app_id"] == .string("shop") && json["attempt"] == .string("2"))
        #expect(json["reason"] == .string("line one\nline \"two\""))
        let ts = try #require(json["ts"]?.stringValue)
        #expect(Self.isMillisecondStamp(ts), "\(ts)")
    }

    @Test func textLinesStartWithAMillisecondTimestamp() throws {
        let lines = Lines()
        Logger(component: "events", sink: lines.sink()).with([("job_id", "j 2")]).info("hello\nworld", ["n": "1"])
        let line = try #require(lines.all.first)
        let stamp = String(line.prefix { $0 != " " })
        #expect(Self.isMillisecondStamp(stamp), "\(line)")
        #expect(line.hasSuffix(#" info events hello world job_id="j 2" n=1"#), "\(line)")
    }

    @Test func theTimestampKeepsTheMilliseconds() {
        let date = Date(timeIntervalSince1970: 1_795_000_000.0425)
        #expect(Logger.timestamp(date).hasSuffix(":40.042Z"), "\(Logger.timestamp(date))")
        #expect(Logger.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
    }

    @Test func belowTheMinimumLevelNothingIsWritten() {
        let lines = Lines()
        let log = Logger(component: "w", minimumLevel: .info, format: .json, sink: lines.sink())
        log.debug("quiet")
        log.info("loud")
        #expect(lines.all.count == 1)
    }
}
