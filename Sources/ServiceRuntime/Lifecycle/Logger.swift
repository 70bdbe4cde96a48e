import FoundationEssentials
import Synchronization

/// Structured log lines on standard error, one per event, in one of two formats:
/// - `text`: `2026-11-29T21:00:00.123Z level component message key=value…` (values with spaces,
///   quotes or control characters are JSON-quoted);
/// - `json`: `{"ts":"…","level":"…","component":"…","msg":"…","key":"value",…}`, one object a line.
///
/// Timestamps are UTC with milliseconds. `with(_:)` gives a logger whose lines all carry some
/// fields (a job's `job_id`, `app_id` …). Callers never pass secrets: URLs are logged through
/// `AMQPSettings.redactedURL`, tokens and keys are never formatted into fields.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var label: String { ["debug", "info", "warn", "error"][rawValue] }
    }

    /// How lines are written (`--log-format`).
    public enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    public var component: String
    public var minimumLevel: Level
    public var format: Format
    /// Fields written on every line, before the call's own.
    private var context: [(String, String)] = []
    private let sink: @Sendable (String) -> Void

    public init(component: String, minimumLevel: Level = .info, format: Format = .text,
                sink: @escaping @Sendable (String) -> Void = Logger.standardError) {
        self.component = component
        self.minimumLevel = minimumLevel
        self.format = format
        self.sink = sink
    }

    /// Writes to standard error, one line at a time.
    public static let standardError: @Sendable (String) -> Void = { line in
        FileOutput.standardError.write(line: line)
    }

    /// A logger for a sub-component sharing this one's sink, level, format and fields.
    public func child(_ name: String) -> Logger {
        var child = self
        child.component = "\(component).\(name)"
        return child
    }

    /// A logger whose every line also carries `fields`.
    public func with(_ fields: [(String, String)]) -> Logger {
        var logger = self
        logger.context += fields
        return logger
    }

    public var isDebugEnabled: Bool { minimumLevel <= .debug }

    public func log(_ level: Level, _ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        guard level >= minimumLevel else { return }
        sink(line(level, message, context + fields.map { ($0.key, $0.value) }, at: Date()))
    }

    /// One formatted line (without the line feed).
    func line(_ level: Level, _ message: String, _ fields: [(String, String)], at date: Date) -> String {
        let ts = Self.timestamp(date)
        switch format {
        case .text:
            var line = "\(ts) \(level.label) \(component) \(Self.textMessage(message))"
            for (k, v) in fields {
                let plain = !v.isEmpty && v.utf8.allSatisfy { $0 > 0x20 && $0 != 0x22 && $0 != 0x5C && $0 < 0x7F }
                line += " \(k)=" + (plain ? v : JSONValue.string(v).encodedString())
            }
            return line
        case .json:
            var object: [(String, String)] = [("ts", ts), ("level", level.label), ("component", component), ("msg", message)]
            for (k, v) in fields where !object.contains(where: { $0.0 == k }) { object.append((k, v)) }
            return "{" + object.map { JSONValue.string($0.0).encodedString() + ":" + JSONValue.string($0.1).encodedString() }
                .joined(separator: ",") + "}"
        }
    }

    /// A message as text: line breaks and other control characters become spaces, so a line stays one line.
    private static func textMessage(_ message: String) -> String {
        guard message.unicodeScalars.contains(where: { $0.value < 0x20 }) else { return message }
        return String(String.UnicodeScalarView(message.unicodeScalars.map { $0.value < 0x20 ? " " : $0 }))
    }

    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-29T21:00:00.123Z`.
    static func timestamp(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        let millis = min(999, Int(((seconds - whole) * 1000).rounded(.down)))
        let base = Timestamp(secondsSince1970: whole).description
        let digits = String(millis)
        return base.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    public func debug(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.debug, m, f) }
    public func info(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.info, m, f) }
    public func warning(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.warning, m, f) }
    public func error(_ m: String, _ f: KeyValuePairs<String, String> = [:]) { log(.error, m, f) }
}

import PushCore

extension Timestamp {
    /// The current wall-clock time.
    public static func now() -> Timestamp { Timestamp(secondsSince1970: Date().timeIntervalSince1970) }
}
