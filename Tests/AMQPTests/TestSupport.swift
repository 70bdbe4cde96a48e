import AMQP
import Foundation
import Synchronization

struct DeadlineExceeded: Error, CustomStringConvertible {
    let what: String
    var description: String { "deadline exceeded: \(what)" }
}

/// Runs `body`, failing with `DeadlineExceeded` after `seconds` (so a hang fails the test).
/// The body runs in its own task and is cancelled, not awaited, at the deadline: even a body
/// stuck in a continuation that ignores cancellation cannot hang the test.
func withDeadline<T: Sendable>(_ seconds: Double, _ what: String,
                               _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let once = ResumeOnce<T>()
    return try await withCheckedThrowingContinuation { continuation in
        once.set(continuation)
        let work = Task { once.resume(await Result { try await body() }) }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            work.cancel()
            once.resume(.failure(DeadlineExceeded(what: what)))
        }
    }
}

/// Polls `condition` every 10 ms until it holds; fails with `DeadlineExceeded` after `seconds`.
func waitUntil(_ what: String, seconds: Double = 10, _ condition: @escaping @Sendable () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw DeadlineExceeded(what: what) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Resumes a continuation at most once, whoever comes first.
final class ResumeOnce<T: Sendable>: Sendable {
    private let pending = Mutex<CheckedContinuation<T, any Error>?>(nil)
    func set(_ continuation: CheckedContinuation<T, any Error>) { pending.withLock { $0 = continuation } }
    func resume(_ result: Result<T, any Error>) { pending.withLock { $0.take() }?.resume(with: result) }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Takes the next `count` deliveries from a consumer's stream, or fails at the deadline.
func take(_ count: Int, from consumer: AMQPConsumer, within seconds: Double = 15) async throws -> [Delivery] {
    try await withDeadline(seconds, "waiting for \(count) deliveries") {
        var taken: [Delivery] = []
        for try await delivery in consumer.deliveries {
            taken.append(delivery)
            if taken.count == count { break }
        }
        return taken
    }
}

/// Declares a plain durable classic queue for a test.
func declareTestQueue(_ name: String, settings: AMQPSettings) throws {
    let client = try AMQPChannelClient(settings: settings)
    defer { client.close() }
    try client.declareQueue(name)
}

/// Every message in `queue` (acked), once at least `expecting` are ready (requeues land
/// shortly after a channel closes).
func drainQueue(_ queue: String, settings: AMQPSettings, expecting: Int) throws -> [Delivery] {
    let client = try AMQPChannelClient(settings: settings)
    defer { client.close() }
    let deadline = ContinuousClock.now + .seconds(15)
    while try client.messageCount(queue: queue) < UInt32(expecting) {
        guard ContinuousClock.now < deadline else { throw DeadlineExceeded(what: "\(expecting) messages back in \(queue)") }
        Thread.sleep(forTimeInterval: 0.05)
    }
    var got: [Delivery] = []
    while let message = try client.get(queue: queue) {
        got.append(message)
        try client.ack(message.deliveryTag, multiple: false)
    }
    return got
}
