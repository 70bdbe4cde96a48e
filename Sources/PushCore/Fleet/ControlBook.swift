/// What the control log says now (pure): the cancels and pauses in force, built by applying the
/// log's records in order. Records past their `until` are over; a `lift` ends one early; a
/// `resume` ends every pause of its App ID written before it.
///
/// Looked up for every job and before every send: the cancels are indexed by what they match
/// (a job id, or a campaign, each with or without an App ID), so a lookup reads at most four
/// short lists whatever the number of cancels in force; pauses by App ID. Records already over
/// when applied are not kept, and `prune` does nothing until the earliest `until` has passed: the
/// start-up catch-up of a long log is linear (second audit, finding 3).
public struct ControlBook: Sendable, Equatable {
    /// What a cancel matches: a job id (its campaign then does not count), else a campaign; of
    /// one App ID or of all (nil).
    private struct CancelKey: Hashable, Sendable {
        enum Subject: Hashable, Sendable { case job(String), campaign(String) }
        let subject: Subject
        let appID: String?
    }

    private var cancels: [String: ControlRecord] = [:]
    private var pauses: [String: ControlRecord] = [:]
    private var cancelsByKey: [CancelKey: Set<String>] = [:]
    private var pausesByApp: [String: Set<String>] = [:]
    /// The earliest `until` of what is kept: nothing to prune before it.
    private var earliestUntil: Int64 = .max

    public init() {}

    /// Two books are equal when they keep the same records (indexes and prune state follow).
    public static func == (a: ControlBook, b: ControlBook) -> Bool { a.cancels == b.cancels && a.pauses == b.pauses }

    /// Applies the next record of the log; a cancel or pause already over at `now` is not kept.
    public mutating func apply(_ record: ControlRecord, now: Int64 = .min) {
        switch record.kind {
        case .cancel, .pause:
            remove(record.id)
            guard record.until > now else { return }
            if record.kind == .cancel {
                cancels[record.id] = record
                cancelsByKey[Self.key(of: record), default: []].insert(record.id)
            } else {
                pauses[record.id] = record
                pausesByApp[record.appID ?? "", default: []].insert(record.id)
            }
            earliestUntil = min(earliestUntil, record.until)
        case .lift:
            if let target = record.target { remove(target) }
        case .resume:
            for id in pausesByApp.removeValue(forKey: record.appID ?? "") ?? [] { pauses[id] = nil }
        }
    }

    /// The cancel in force for a job of `appID`, `campaign` and `jobID` at `now`, if any: the
    /// earliest written (then the smallest id).
    public func cancel(appID: String, campaign: String?, jobID: String, now: Int64) -> ControlRecord? {
        var subjects = [CancelKey.Subject.job(jobID)]
        if let campaign { subjects.append(.campaign(campaign)) }
        var found: ControlRecord?
        for subject in subjects {
            for app in [nil, appID] {
                for id in cancelsByKey[CancelKey(subject: subject, appID: app)] ?? [] {
                    guard let c = cancels[id], c.until > now else { continue }
                    if found.map({ (c.at, c.id) < ($0.at, $0.id) }) ?? true { found = c }
                }
            }
        }
        return found
    }

    /// The pause of `appID` in force at `now` that lasts longest, if any.
    public func pause(appID: String, now: Int64) -> ControlRecord? {
        (pausesByApp[appID] ?? []).compactMap { pauses[$0] }.filter { $0.until > now }.max { ($0.until, $0.id) < ($1.until, $1.id) }
    }

    /// Every cancel and pause in force at `now`, oldest first.
    public func active(now: Int64) -> [ControlRecord] {
        (Array(cancels.values) + Array(pauses.values)).filter { $0.until > now }.sorted { ($0.at, $0.id) < ($1.at, $1.id) }
    }

    /// How many cancels and pauses are kept (in force, or ended and not pruned yet).
    public var count: Int { cancels.count + pauses.count }

    /// Forgets what ended before `now` (the log's retention drops it too).
    public mutating func prune(now: Int64) {
        guard now >= earliestUntil else { return }
        for record in Array(cancels.values) + Array(pauses.values) where record.until <= now { remove(record.id) }
        earliestUntil = (Array(cancels.values) + Array(pauses.values)).map(\.until).min() ?? .max
    }

    private mutating func remove(_ id: String) {
        if let old = cancels.removeValue(forKey: id) {
            let key = Self.key(of: old)
            cancelsByKey[key]?.remove(id)
            if cancelsByKey[key]?.isEmpty == true { cancelsByKey[key] = nil }
        }
        if let old = pauses.removeValue(forKey: id) {
            let app = old.appID ?? ""
            pausesByApp[app]?.remove(id)
            if pausesByApp[app]?.isEmpty == true { pausesByApp[app] = nil }
        }
    }

    private static func key(of cancel: ControlRecord) -> CancelKey {
        CancelKey(subject: cancel.jobID.map(CancelKey.Subject.job) ?? .campaign(cancel.campaign ?? ""), appID: cancel.appID)
    }
}
