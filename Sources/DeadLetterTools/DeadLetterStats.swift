import PushCore

/// Counts of DLQ messages by code, by App ID and by age of the last failure. Pure: feed it
/// entries with `add`, then print `lines` or `json`.
public struct DeadLetterStats: Sendable, Equatable {
    /// Age buckets of the last failure, youngest first.
    public enum AgeBucket: String, Sendable, CaseIterable {
        case underAnHour = "<1h", upToADay = "1h-24h", upToAWeek = "1d-7d", overAWeek = ">7d", unknown = "unknown"

        static func of(age: Double?) -> AgeBucket {
            guard let age else { return .unknown }
            if age < 3600 { return .underAnHour }
            if age < 86_400 { return .upToADay }
            if age < 604_800 { return .upToAWeek }
            return .overAWeek
        }
    }

    public let now: Timestamp
    public private(set) var total = 0
    public private(set) var bytes = 0
    public private(set) var byCode: [String: Int] = [:]
    public private(set) var byApp: [String: Int] = [:]
    public private(set) var byAge: [AgeBucket: Int] = [:]
    /// Earliest and latest last-failure times seen.
    public private(set) var oldest: Timestamp?
    public private(set) var newest: Timestamp?

    public init(now: Timestamp) { self.now = now }

    /// App ID shown for messages whose body names none (not JSON, or no `app_id`).
    public static let noApp = "(none)"

    public mutating func add(_ entry: DeadLetterEntry) {
        total += 1
        bytes += entry.bodyBytes
        byCode[entry.code, default: 0] += 1
        byApp[entry.appID ?? Self.noApp, default: 0] += 1
        byAge[AgeBucket.of(age: entry.age(at: now)), default: 0] += 1
        if let last = entry.lastFailedAt {
            oldest = min(oldest ?? last, last)
            newest = max(newest ?? last, last)
        }
    }

    /// Largest count first, then by name.
    private static func ranked(_ counts: [String: Int]) -> [(String, Int)] {
        counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
    }

    /// A report for people.
    public func lines(queue: String) -> [String] {
        var lines = ["\(total) dead letter(s) in \(queue), \(bytes) body bytes"
            + (oldest.map { ", oldest \($0)" } ?? "") + (newest.map { ", newest \($0)" } ?? "")]
        guard total > 0 else { return lines }
        lines.append("by code:")
        lines += Self.ranked(byCode).map { "  " + $0.0.padding(to: 28) + String($0.1) }
        lines.append("by app:")
        lines += Self.ranked(byApp).map { "  " + $0.0.padding(to: 28) + String($0.1) }
        lines.append("by age of last failure:")
        lines += AgeBucket.allCases.compactMap { bucket in
            byAge[bucket].map { "  " + bucket.rawValue.padding(to: 28) + String($0) }
        }
        return lines
    }

    /// The same report as one JSON object (every age bucket present, zero when empty).
    public func json(queue: String) -> JSONValue {
        func object(_ counts: [String: Int]) -> JSONValue { .object(counts.mapValues { .int(Int64($0)) }) }
        var ages: [String: JSONValue] = [:]
        for bucket in AgeBucket.allCases { ages[bucket.rawValue] = .int(Int64(byAge[bucket] ?? 0)) }
        return .object([
            "queue": .string(queue), "total": .int(Int64(total)), "body_bytes": .int(Int64(bytes)),
            "by_code": object(byCode), "by_app": object(byApp), "by_age": .object(ages),
            "oldest": oldest.map { .string($0.description) } ?? .null,
            "newest": newest.map { .string($0.description) } ?? .null,
        ])
    }
}
