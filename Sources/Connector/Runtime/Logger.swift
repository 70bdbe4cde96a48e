import Foundation
import Synchronization

/// Structured log lines on standard error: `ts level component message key=value…`.
///
/// Callers never pass secrets: URLs are logged through `AMQPSettings.redactedURL`, tokens and
/// keys are never formatted into fields.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var label: String { ["debug", "info", "warn", "error"][rawValue] }
    }

    public var component: String
    public var minimumLevel: Level
    private let sink: @Sendable (String) -> Void

    public init(component: String, minimumLevel: Level = .info, sink: @escaping @Sendable (String) -> Void = Logger.standardError) {
        self.component = component
        self.minimumLevel = minimumLevel
        self.sink = sink
    }

    /// Writes to standard error, one line at a time.
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// A logger for a sub-component sharing this one's sink and level.
    public func child(_ name: String) -> Logger {
        Logger(component: "\(component).\(name)", minimumLevel: minimumLevel, sink: sink)
    }

    public func log(_ level: Level, _ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        guard level >= minimumLevel else { return }
        var line = "\(Timestamp.now().description) \(level.label) \(component) \(message)"
        for (k, v) in fields {
            let plain = !v.isEmpty && v.utf8.allSatisfy { $0 > 0x20 && $0 != 0x22 && $0 != 0x5C && $0 < 0x7F }
            line += " \(k)=" + (plain ? v : JSONValue.string(v).encodedString())
        }
        sink(line)
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
