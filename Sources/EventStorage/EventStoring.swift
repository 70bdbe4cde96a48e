import FoundationEssentials
import PushCore

/// An events database engine: what the batch writer, the events consumer, `stats` and the
/// tests use. One instance serves one thread at a time (the writer keeps its own; the consumer
/// and `stats` open theirs through `EventsDatabase.open()`).
public protocol EventStoring: AnyObject, Sendable {
    /// Stores `records` and the stream `positions` in one transaction; on failure nothing of it
    /// is stored. A position never moves a stored offset back.
    @discardableResult
    func store(_ records: [EventStore.Record], positions: [EventStore.StreamPosition], now: Timestamp) throws -> EventStore.WriteSummary

    /// The offset stored for `consumer` (group) reading `stream`, nil when none is (first start).
    func storedOffset(consumer: String, stream: String) throws -> Int64?

    /// The funnel of the sends in `scope`.
    func funnel(_ scope: FunnelScope) throws -> Funnel
}

extension EventStoring {
    /// Stores `records` (and `positions`) stamped with the current time.
    @discardableResult
    public func store(_ records: [EventStore.Record], positions: [EventStore.StreamPosition] = []) throws -> EventStore.WriteSummary {
        try store(records, positions: positions, now: Timestamp(secondsSince1970: Date().timeIntervalSince1970))
    }
}
