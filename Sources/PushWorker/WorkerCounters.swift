import Synchronization

/// Running totals of a worker process, for logs, the summary at exit and tests.
public final class WorkerCounters: Sendable {
    public let deliveries = Atomic<Int>(0)
    public let acked = Atomic<Int>(0)
    public let results = Atomic<Int>(0)
    public let retries = Atomic<Int>(0)
    public let deadLetters = Atomic<Int>(0)
    /// Connections reopened after a loss (consumer or publisher).
    public let reconnects = Atomic<Int>(0)
    /// Outbound messages published again after a nack, channel error or lost connection.
    public let republished = Atomic<Int>(0)
    /// Deliveries whose sends are done and whose messages wait for confirms right now (a gauge).
    public let awaitingConfirm = Atomic<Int>(0)
    /// Times the broker blocked a publisher connection (connection.blocked, a resource alarm).
    public let blocked = Atomic<Int>(0)
    public let connectAttempts = Atomic<Int>(0)
    /// Times a job went on in a task instead of its callbacks: several targets, a broker alarm,
    /// no publisher to use, a publish to retry. The one-target happy path takes none.
    public let jobTasks = Atomic<Int>(0)

    public init() {}

    func count(_ messages: [OutboundMessage]) {
        for m in messages {
            switch m.kind {
            case .result: results.add(1, ordering: .relaxed)
            case .retry: retries.add(1, ordering: .relaxed)
            case .deadLetter: deadLetters.add(1, ordering: .relaxed)
            }
        }
    }

    /// `deliveries=… acked=… results=…` for the log.
    public var summary: KeyValuePairs<String, String> {
        ["deliveries": "\(deliveries.load(ordering: .relaxed))", "acked": "\(acked.load(ordering: .relaxed))",
         "results": "\(results.load(ordering: .relaxed))",
         "retries": "\(retries.load(ordering: .relaxed))", "dead_letters": "\(deadLetters.load(ordering: .relaxed))",
         "reconnects": "\(reconnects.load(ordering: .relaxed))", "republished": "\(republished.load(ordering: .relaxed))",
         "blocked": "\(blocked.load(ordering: .relaxed))"]
    }
}
