/// What the control log says now (pure): the cancels and pauses in force, built by applying the
/// log's records in order. Records past their `until` are over; a `lift` ends one early; a
/// `resume` ends every pause of its App ID written before it.
public struct ControlBook: Sendable, Equatable {
    private var cancels: [String: ControlRecord] = [:]
    private var pauses: [String: ControlRecord] = [:]

    public init() {}

    /// Applies the next record of the log.
    public mutating func apply(_ record: ControlRecord) {
        switch record.kind {
        case .cancel: cancels[record.id] = record
        case .pause: pauses[record.id] = record
        case .lift:
            if let target = record.target {
                cancels[target] = nil
                pauses[target] = nil
            }
        case .resume: pauses = pauses.filter { $0.value.appID != record.appID }
        }
    }

    /// The cancel in force for a job of `appID`, `campaign` and `jobID` at `now`, if any.
    public func cancel(appID: String, campaign: String?, jobID: String, now: Int64) -> ControlRecord? {
        cancels.values.filter { c in
            c.until > now && (c.appID == nil || c.appID == appID)
                && (c.jobID.map { $0 == jobID } ?? (campaign != nil && c.campaign == campaign))
        }.min { $0.at < $1.at }
    }

    /// The pause of `appID` in force at `now` that lasts longest, if any.
    public func pause(appID: String, now: Int64) -> ControlRecord? {
        pauses.values.filter { $0.appID == appID && $0.until > now }.max { $0.until < $1.until }
    }

    /// Every cancel and pause in force at `now`, oldest first.
    public func active(now: Int64) -> [ControlRecord] {
        (Array(cancels.values) + Array(pauses.values)).filter { $0.until > now }.sorted { ($0.at, $0.id) < ($1.at, $1.id) }
    }

    /// Forgets what ended before `now` (the log's retention drops it too).
    public mutating func prune(now: Int64) {
        cancels = cancels.filter { $0.value.until > now }
        pauses = pauses.filter { $0.value.until > now }
    }
}
