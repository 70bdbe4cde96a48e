import AMQP
import FoundationEssentials
import ServiceRuntime
import Synchronization

/// Publishes events to the events exchange with confirms over a few `ConfirmingPublisher`
/// connections, connecting lazily and reconnecting after a failure. While the broker is
/// unreachable it fails fast (one connection attempt per connection slot per `retryInterval`).
public final class EventPublisher: Sendable {
    private struct Slot {
        var connecting: Task<ConfirmingPublisher, any Error>?
        var lastFailure: ContinuousClock.Instant?
    }

    private let settings: AMQPSettings
    private let exchange: String
    private let retryInterval: Duration
    private let slots: Mutex<[Slot]>
    private let slotCount: Int
    private let next = Atomic<Int>(0)

    public init(settings: AMQPSettings, exchange: String, connections: Int = 2, retryInterval: Duration = .milliseconds(500),
                logger: Logger? = nil) {
        self.settings = settings
        self.exchange = exchange
        self.retryInterval = retryInterval
        self.logger = logger
        slotCount = max(1, connections)
        slots = Mutex(Array(repeating: Slot(), count: max(1, connections)))
        stallLimit = .seconds(max(2, settings.heartbeatSeconds > 0 ? settings.heartbeatSeconds : 30))
    }

    private let logger: Logger?

    /// A connection whose write or oldest confirm waited longer than this (a heartbeat, at least
    /// 2 s) counts as down: its node may be silent. The connection itself ends within two
    /// heartbeats and the slot's next one tries the next node.
    private let stallLimit: Duration

    /// How long `close` waits for a connection, beyond its own confirm wait: one stuck in a write
    /// to a silent node is left to end with the process.
    static let closeLimit: Duration = .seconds(8)

    /// Publishes every body and returns once the broker confirmed all of them; throws if any
    /// was not confirmed (some may have been stored: consumers count duplicates once).
    public func publish(_ bodies: [Data]) async throws {
        let index = next.add(1, ordering: .relaxed).oldValue % slotCount
        guard let connecting = connection(index) else { throw EventPublishError.brokerUnreachable }
        let publisher: ConfirmingPublisher
        do {
            publisher = try await connecting.value
        } catch {
            drop(index, connecting)
            throw EventPublishError.brokerUnreachable
        }
        // Answered now (503, the app retries) rather than queued behind a write that waits for
        // a silent node until the connection is given up.
        if publisher.isStalled(longerThan: stallLimit) { throw EventPublishError.brokerUnreachable }
        let properties = MessageProperties(contentType: "application/json", persistent: true)
        // One batch, one wait: the connection thread writes them together and calls back once
        // the last confirm arrived.
        let outcomes = await publisher.publish(batch: bodies.map {
            ConfirmingPublisher.Outgoing(exchange: exchange, routingKey: "", body: $0, properties: properties)
        })
        let failures = outcomes.compactMap { $0 }
        guard !failures.isEmpty else { return }
        // A refusal of the message (nack, routed nowhere) says nothing about the connection; any
        // other failure means it is gone.
        if failures.allSatisfy({ $0.code == .nacked || $0.code == .returned }) { throw EventPublishError.notConfirmed }
        if drop(index, connecting) {
            logger?.warning("events publisher connection lost; the next one tries the next broker node",
                            ["slot": "\(index)", "error": "\(failures.first { $0.code != .nacked && $0.code != .returned }.map { "\($0)" } ?? "")"])
            Task { await publisher.close() }
        }
        throw EventPublishError.brokerUnreachable
    }

    /// For `/healthz`: true when a slot holds a live connection, else after opening one (at most
    /// one attempt per `retryInterval`, like `publish`). A dead connection is dropped here, so
    /// the next publish opens a new one instead of failing on it.
    public func brokerReachable() async -> Bool {
        let held = slots.withLock { slots in slots.indices.compactMap { i in slots[i].connecting.map { (i, $0) } } }
        for (index, task) in held {
            guard let publisher = try? await task.value else { continue }
            if publisher.isAlive { if publisher.isStalled(longerThan: stallLimit) { continue } else { return true } }
            if drop(index, task) {
                logger?.warning("events publisher connection lost; the next one tries the next broker node", ["slot": "\(index)"])
                Task { await publisher.close() }
            }
        }
        let index = next.add(1, ordering: .relaxed).oldValue % slotCount
        guard let connecting = connection(index) else { return false }
        do {
            let publisher = try await connecting.value
            return publisher.isAlive && !publisher.isStalled(longerThan: stallLimit)
        } catch {
            drop(index, connecting)
            return false
        }
    }

    /// Slot `index`'s connection, opening it when there is none; nil when its last attempt
    /// failed less than `retryInterval` ago (fail fast while the broker is unreachable).
    private func connection(_ index: Int) -> Task<ConfirmingPublisher, any Error>? {
        slots.withLock { slots in
            if let task = slots[index].connecting { return task }
            if let failed = slots[index].lastFailure, ContinuousClock.now - failed < retryInterval { return nil }
            let settings = self.settings
            let task = Task { try await ConfirmingPublisher.connect(settings: settings) }
            slots[index].connecting = task
            return task
        }
    }

    /// Forgets a slot's connection (if it is still `task`); true when this call dropped it.
    @discardableResult
    private func drop(_ index: Int, _ task: Task<ConfirmingPublisher, any Error>) -> Bool {
        slots.withLock { slots in
            guard let current = slots[index].connecting, current == task else { return false }
            slots[index].connecting = nil
            slots[index].lastFailure = .now
            return true
        }
    }

    /// Closes every connection (waiting for outstanding confirms), within `closeLimit` in all:
    /// a connection stuck on a silent node does not hold the process's stop.
    public func close() async {
        let tasks = slots.withLock { slots in
            defer { for i in slots.indices { slots[i].connecting = nil } }
            return slots.compactMap(\.connecting)
        }
        // Whichever comes first, the closes or the limit, resumes the wait (once).
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let waiting = Mutex<CheckedContinuation<Void, Never>?>(done)
            let resume: @Sendable () -> Void = { waiting.withLock { $0.take() }?.resume() }
            Task {
                for task in tasks { await (try? task.value)?.close() }
                resume()
            }
            Task {
                try? await Task.sleep(for: Self.closeLimit)
                resume()
            }
        }
    }
}

/// Why events could not be acknowledged: the app should retry (503).
public struct EventPublishError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable { case unreachable, nacked }
    private let code: Code
    public static let brokerUnreachable = EventPublishError(code: .unreachable)
    public static let notConfirmed = EventPublishError(code: .nacked)
    public var description: String {
        code == .unreachable ? "the broker is unreachable" : "the broker did not confirm the events"
    }
}
