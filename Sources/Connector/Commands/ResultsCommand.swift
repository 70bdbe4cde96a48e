import AMQP
import Foundation
import PushCore

/// `push-connector results`: takes results off the results queue and prints them, one JSON per
/// line — for demos, smoke tests and debugging (production consumers bind their own queues).
public struct ResultsCommand: Command {
    public static let spec = CommandSpec(
        name: "results", synopsis: "[--count N] [--timeout SECONDS] [--keep] [options]",
        about: """
        Takes up to N results from <prefix>.results, waiting up to --timeout seconds for them, and
        prints each as one JSON line. --keep leaves them on the queue. Exit code 1 when fewer than N
        arrived in time.
        """,
        options: [
            .value("--count", "N", "results to take", default: "10", .integer(1...1_000_000), setting: false),
            .value("--timeout", "SECONDS", "how long to wait for them", default: "10", .integer(0...86_400), setting: false),
            .flag("--keep", "leave them on the queue", setting: false),
        ] + CommonOptions.brokerOptions)

    let arguments: ParsedArguments
    public init(_ arguments: ParsedArguments) throws(UsageError) { self.arguments = arguments }

    public func run(_ context: CommandContext) async throws -> Int32 {
        let settings = try CommonOptions.brokerSettings(arguments, context, command: "results")
        let topology = try CommonOptions.topology(arguments, command: "results")
        let count = arguments.integer("--count")
        let timeout = arguments.integer("--timeout")
        let client: AMQPChannelClient
        do { client = try AMQPChannelClient(settings: settings) } catch {
            throw CommandFailure("cannot connect to \(settings.redactedURL): \(error)")
        }
        defer { client.close() }
        let deadline = ContinuousClock.now + .seconds(timeout)
        var taken = 0
        while taken < count {
            guard let delivery = try client.get(queue: topology.resultsQueue) else {
                if ContinuousClock.now >= deadline { break }
                try await Task.sleep(for: .milliseconds(100))
                continue
            }
            context.console.out(String(decoding: delivery.body, as: UTF8.self))
            if !arguments.has("--keep") { try client.ack(delivery.deliveryTag) }
            taken += 1
        }
        if taken < count {
            context.console.err("results: \(taken) of \(count) result(s) arrived within \(timeout) s")
            return 1
        }
        return 0
    }
}
