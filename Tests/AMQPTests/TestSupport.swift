import AMQP
import Foundation

struct DeadlineExceeded: Error, CustomStringConvertible {
    let what: String
    var description: String { "deadline exceeded: \(what)" }
}

/// Runs `body`, failing with `DeadlineExceeded` after `seconds` (so a hang fails the test).
func withDeadline<T: Sendable>(_ seconds: Double, _ what: String,
                               _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw DeadlineExceeded(what: what)
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
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
