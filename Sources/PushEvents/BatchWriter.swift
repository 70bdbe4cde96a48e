import EventStorage
import FoundationEssentials
import OSThread
import PushCore
import ServiceRuntime
import Synchronization

/// Writes records to an events store (`EventStoring`) on a thread of its own, in batched transactions: it
/// takes what has queued up — at most `maxBatch`, waiting at most `maxDelay` after the first
/// record for more — commits, and only then settles each record (acks its delivery). A failed
/// transaction settles the batch as failed (the deliveries are requeued), except when the
/// database is unreachable, busy or out of room (`EventStore.isTransient`: PostgreSQL down,
/// deadlock; a SQLite file locked by another writer, a full disk): the writer then writes the
/// same batch again, with backoff, until it commits or the writer stops — nothing is acked,
/// dead-lettered or skipped while the database is away.
///
/// A record read from a stream carries its position: the transaction stores the last position
/// of each consumer with the records. After a failed transaction holding positions of a stream
/// consumer's `generation` (one connection), the writer settles that generation's later records
/// as failed without writing them: a stored offset then always covers every record before it,
/// and the consumer, reconnected as the next generation, reads again from the stored offset.
public final class BatchWriter: @unchecked Sendable {
    /// A record and how to settle its delivery once the transaction ended (true: committed).
    public struct Pending: Sendable {
        /// nil: nothing to store but the position (a stream message moved to a DLQ).
        public var record: EventStore.Record?
        /// The stream message the record came from.
        public var position: EventStore.StreamPosition?
        /// The stream consumer's connection the position belongs to.
        public var generation: Int
        public var settle: @Sendable (Bool) -> Void

        public init(record: EventStore.Record?, position: EventStore.StreamPosition? = nil, generation: Int = 0,
                    settle: @escaping @Sendable (Bool) -> Void) {
            self.record = record
            self.position = position
            self.generation = generation
            self.settle = settle
        }
    }

    private let store: any EventStoring
    /// Transactions failed in a row (touched only by the writer thread): drives the backoff.
    private var consecutiveFailures = 0
    /// The latest transaction failed (for `/healthz`).
    public let lastTransactionFailed = Atomic<Bool>(false)
    /// Per stream consumer, the latest generation a transaction failed for (writer thread only).
    private var failedGeneration: [String: Int] = [:]
    private let metrics: EventMetrics
    private let logger: Logger
    private let maxBatch: Int
    private let maxDelay: TimeInterval
    // Guarded by `condition`.
    private let condition = OSCondition()
    private var queue: [Pending] = []
    private var busy = false
    private var stopping = false
    private var finished = false

    public init(store: any EventStoring, metrics: EventMetrics, logger: Logger, maxBatch: Int = 500, maxDelay: Duration = .milliseconds(50)) {
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.maxBatch = max(1, maxBatch)
        self.maxDelay = Double(maxDelay.components.seconds) + Double(maxDelay.components.attoseconds) / 1e18
        OSThread.start(name: "events-writer") { [self] in loop() }
    }

    /// Queues a record; it is settled after its transaction.
    public func submit(_ pending: Pending) {
        condition.lock()
        queue.append(pending)
        condition.broadcast()
        condition.unlock()
    }

    /// Records queued or being written.
    public var backlog: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count + (busy ? 1 : 0)
    }

    /// Writes what is queued, then ends the thread; waits for it.
    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty && stopping {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let deadline = ContinuousClock.now + .seconds(maxDelay)
            while queue.count < maxBatch && !stopping && condition.wait(until: deadline) {}
            let batch = Array(queue.prefix(maxBatch))
            queue.removeFirst(batch.count)
            busy = true
            condition.unlock()

            write(batch)

            condition.lock()
            busy = false
            condition.broadcast()
            condition.unlock()
        }
    }

    private func write(_ all: [Pending]) {
        var batch: [Pending] = []
        for p in all {
            if let position = p.position, let failed = failedGeneration[position.consumer], p.generation <= failed {
                p.settle(false)
            } else {
                batch.append(p)
            }
        }
        guard !batch.isEmpty else { return }
        var positions: [String: EventStore.StreamPosition] = [:]
        for p in batch { if let position = p.position { positions[position.consumer + "\u{0}" + position.stream] = position } }
        let records = batch.compactMap(\.record)
        let sortedPositions = positions.values.sorted { $0.consumer < $1.consumer }
        while true {
            do {
                let summary = try store.store(records, positions: sortedPositions)
                metrics.transactions.increment()
                metrics.duplicates.increment(by: summary.duplicates)
                metrics.eventsStored.increment(by: summary.eventsInserted)
                metrics.sendsStored.increment(by: summary.sendsInserted)
                for p in batch { p.settle(true) }
                consecutiveFailures = 0
                lastTransactionFailed.store(false, ordering: .relaxed)
                return
            } catch {
                metrics.storeFailures.increment()
                lastTransactionFailed.store(true, ordering: .relaxed)
                // A store that keeps failing (disk full, database down) must not spin.
                consecutiveFailures += 1
                let backoff = min(5.0, 0.05 * Double(1 << min(consecutiveFailures, 7)))
                if EventStore.isTransient(error) && !isStopping {
                    logger.error("transaction failed; writing the batch again", ["error": "\(error)", "records": "\(batch.count)",
                                                                                 "in": "\(backoff)s"])
                    OSThread.sleep(seconds: backoff)
                    continue
                }
                logger.error("transaction failed; deliveries requeued", ["error": "\(error)", "records": "\(batch.count)"])
                for p in batch {
                    if let position = p.position { failedGeneration[position.consumer] = max(failedGeneration[position.consumer] ?? p.generation, p.generation) }
                    p.settle(false)
                }
                OSThread.sleep(seconds: backoff)
                return
            }
        }
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }
}
