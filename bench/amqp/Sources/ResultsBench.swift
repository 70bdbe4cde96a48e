import AMQP
import Foundation

/// Broker CPU per result: the results exchange bound `#` to two quorum queues (earlier
/// versions: one nobody reads, one the events consumer consumes) vs one stream (one reader).
/// Each round publishes `messages` result-sized bodies with streamed confirms, then reads the
/// consumed copy to the end with acks; the broker's CPU (utime + stime of BEAM_PID from /proc)
/// over the round, divided by the messages.
enum ResultsBench {
    static func run(settings: AMQPSettings, arguments: [String]) async throws {
        guard let pid = ProcessInfo.processInfo.environment["BEAM_PID"].flatMap(Int32.init) else {
            print("results mode needs BEAM_PID (the broker's beam.smp process)")
            exit(2)
        }
        let total = arguments.first.flatMap(Int.init) ?? 20_000
        let window = arguments.count > 1 ? Int(arguments[1]) ?? 1_000 : 1_000
        let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 2 : 2
        let body = Data(#"{"job_id":"8d1e0000-0000-0000-0000-000000000000","app_id":"shop-android","mn_message_id":"mnid2m.1234.12.12.1.2","campaign":"OFFERTA_ESTIVA","target":{"token":"\#(String(repeating: "t", count: 152))"},"outcome":"sent","fcm_message_name":"projects/shop-prod/messages/0:1700000000000000%0000000000000000","error":null,"attempts":1,"completed_at":"2026-11-29T21:00:00Z"}"#.utf8)
        print("results: \(total) messages of \(body.count) B per round, window \(window), \(rounds) round(s) each, broker pid \(pid)")
        var figures: [String: [Double]] = [:]
        for round in 0..<rounds {
            for mode in ["two quorum queues", "one stream"] {
                let micros = try await measure(mode: mode, round: round, settings: settings, pid: pid, total: total, window: window, body: body)
                figures[mode, default: []].append(micros)
                print(String(format: "round %d  %-18@ broker CPU %.0f µs/result", round + 1, mode as NSString, micros))
            }
        }
        for mode in ["two quorum queues", "one stream"] {
            let values = figures[mode] ?? []
            print(String(format: "mean    %-18@ broker CPU %.0f µs/result", mode as NSString, values.reduce(0, +) / Double(max(values.count, 1))))
        }
    }

    /// utime + stime of `pid`, seconds.
    static func cpu(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func measure(mode: String, round: Int, settings: AMQPSettings, pid: Int32, total: Int, window: Int, body: Data) async throws -> Double {
        let exchange = "bench-results-\(getpid())-\(round)"
        let setup = try AMQPChannelClient(settings: settings)
        defer { setup.close() }
        try setup.declareExchange(exchange, type: "topic")
        let queues: [String]
        let read: String
        if mode == "one stream" {
            queues = ["\(exchange).stream"]
            try setup.declareQueue(queues[0], arguments: ["x-queue-type": "stream", "x-max-age": "7D", "x-max-length-bytes": .int(20_000_000_000)])
            read = queues[0]
        } else {
            queues = ["\(exchange).results", "\(exchange).events.results"]
            for q in queues { try setup.declareQueue(q, arguments: ["x-queue-type": "quorum"]) }
            read = queues[1]
        }
        for q in queues { try setup.bindQueue(q, exchange: exchange, routingKey: "#") }
        let cpu0 = try cpu(pid)
        let publisher = try await ConfirmingPublisher.connect(settings: settings)
        let properties = MessageProperties(contentType: "application/json", persistent: true)
        try await withThrowingTaskGroup(of: Void.self) { group in
            var submitted = 0
            func add() {
                group.addTask { try await publisher.publish(exchange: exchange, routingKey: "shop-android.sent", body: body, properties: properties) }
                submitted += 1
            }
            while submitted < min(window, total) { add() }
            while try await group.next() != nil { if submitted < total { add() } }
        }
        await publisher.close()
        let consumer = try await AMQPConsumer.start(settings: settings, queue: read, prefetch: UInt16(min(window, 65_535)),
                                                    arguments: mode == "one stream" ? StreamOffset.first.consumerArguments : [:])
        var consumed = 0
        for try await delivery in consumer.deliveries {
            consumer.ack(delivery.deliveryTag)
            consumed += 1
            if consumed == total { break }
        }
        await consumer.close()
        let micros = (try cpu(pid) - cpu0) / Double(total) * 1e6
        for q in queues { try setup.deleteQueue(q) }
        try setup.deleteExchange(exchange)
        return micros
    }
}
