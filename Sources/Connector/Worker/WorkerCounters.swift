import Synchronization

/// Running totals of a worker process, for logs, the summary at exit and tests.
public final class WorkerCounters: Sendable {
    public let deliveries = Atomic<Int>(0)
    public let acked = Atomic<Int>(0)
    public let requeued = Atomic<Int>(0)
    public let results = Atomic<Int>(0)
    public let retries = Atomic<Int>(0)
    public let deadLetters = Atomic<Int>(0)
    public let reconnects = Atomic<Int>(0)
    public let connectAttempts = Atomic<Int>(0)

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
         "requeued": "\(requeued.load(ordering: .relaxed))", "results": "\(results.load(ordering: .relaxed))",
         "retries": "\(retries.load(ordering: .relaxed))", "dead_letters": "\(deadLetters.load(ordering: .relaxed))",
         "reconnects": "\(reconnects.load(ordering: .relaxed))"]
    }
}
