import CLIKit
import PushCore

/// Which DLQ messages a `dlq` command acts on. Pure. Values given for one field are
/// alternatives (any of the App IDs), fields combine with AND. An empty filter matches all.
///
/// Age limits compare `push-last-failed-at` (or the `x-death` time) with the current instant; a
/// message carrying no failure time matches neither `olderThan` nor `newerThan`.
public struct DeadLetterFilter: Sendable, Equatable {
    public var appIDs: Set<String> = []
    public var codes: Set<String> = []
    public var jobIDs: Set<String> = []
    public var campaigns: Set<String> = []
    /// Seconds: matches messages whose last failure is at least this old.
    public var olderThan: Double?
    /// Seconds: matches messages whose last failure is less than this old.
    public var newerThan: Double?

    public init(appIDs: Set<String> = [], codes: Set<String> = [], jobIDs: Set<String> = [], campaigns: Set<String> = [],
                olderThan: Double? = nil, newerThan: Double? = nil) {
        self.appIDs = appIDs
        self.codes = codes
        self.jobIDs = jobIDs
        self.campaigns = campaigns
        self.olderThan = olderThan
        self.newerThan = newerThan
    }

    /// True when no criterion is set (everything matches).
    public var isEmpty: Bool {
        appIDs.isEmpty && codes.isEmpty && jobIDs.isEmpty && campaigns.isEmpty && olderThan == nil && newerThan == nil
    }

    public func matches(_ entry: DeadLetterEntry, now: Timestamp) -> Bool {
        func allows(_ set: Set<String>, _ value: String?) -> Bool { set.isEmpty || value.map(set.contains) == true }
        guard allows(appIDs, entry.appID), allows(codes, entry.code), allows(jobIDs, entry.jobID),
              allows(campaigns, entry.campaign) else { return false }
        if let olderThan {
            guard let age = entry.age(at: now), age >= olderThan else { return false }
        }
        if let newerThan {
            guard let age = entry.age(at: now), age < newerThan else { return false }
        }
        return true
    }

    /// Seconds of a positive duration in the command line's grammar (`DurationText`: `90s`,
    /// `30m`, `2h`, `7d`, `1w`, `1h30m`, bare seconds); nil for anything else.
    public static func parseDuration(_ text: String) -> Double? {
        DurationText.seconds(text).flatMap { $0 > 0 ? Double($0) : nil }
    }
}
