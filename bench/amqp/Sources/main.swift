// amqp-bench: publish-with-confirm throughput, streamed confirms vs one wait per message
// (baseline, same run), and consume+ack throughput, against a real broker.
//   amqp-bench AMQP_URL [messages] [window]
// Results mode: the broker's CPU (beam.smp, BEAM_PID) per result, results exchange bound to two
// quorum queues (one consumed, as the events consumer did) vs one stream (read by one reader).
//   BEAM_PID=… amqp-bench AMQP_URL results [messages] [window] [rounds]
import AMQP
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: amqp-bench AMQP_URL [messages=20000] [window=1000] | AMQP_URL results [messages] [window] [rounds]")
    exit(2)
}
let settings = try AMQPSettings(url: arguments[1])
if arguments.count > 2 && arguments[2] == "results" {
    try await ResultsBench.run(settings: settings, arguments: Array(arguments.dropFirst(3)))
    exit(0)
}
let total = arguments.count > 2 ? Int(arguments[2]) ?? 20_000 : 20_000
let window = arguments.count > 3 ? Int(arguments[3]) ?? 1_000 : 1_000
let baselineTotal = max(total / 10, 500)
let body = Data(repeating: 0x61, count: 512)
let properties = MessageProperties(contentType: "application/json", headers: ["push-attempts": 1],
                                   persistent: true, messageID: "bench")

func seconds(_ start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

let queue = "amqp-bench-\(getpid())"
let setup = try AMQPChannelClient(settings: settings)
try setup.declareQueue(queue, arguments: ["x-queue-type": "quorum"])

// 1. Baseline: one blocking wait for the confirm of every message.
var start = ContinuousClock.now
for _ in 0..<baselineTotal {
    try setup.publishConfirmed(exchange: "", routingKey: queue, body: body, properties: properties)
}
let baselineRate = Double(baselineTotal) / seconds(start)
try setup.purgeQueue(queue)

// 2. Streamed confirms: up to `window` publishes in flight on one ConfirmingPublisher.
let publisher = try await ConfirmingPublisher.connect(settings: settings)
start = ContinuousClock.now
var cpuStart = cpuSeconds()
try await withThrowingTaskGroup(of: Void.self) { group in
    var submitted = 0
    while submitted < min(window, total) {
        group.addTask { try await publisher.publish(exchange: "", routingKey: queue, body: body, properties: properties) }
        submitted += 1
    }
    while try await group.next() != nil {
        if submitted < total {
            group.addTask { try await publisher.publish(exchange: "", routingKey: queue, body: body, properties: properties) }
            submitted += 1
        }
    }
}
let streamedRate = Double(total) / seconds(start)
let publishCPU = (cpuSeconds() - cpuStart) / Double(total) * 1e6
await publisher.close()

// 3. Consume + ack everything just published.
let consumer = try await AMQPConsumer.start(settings: settings, queue: queue, prefetch: UInt16(min(window, 65_535)))
start = ContinuousClock.now
cpuStart = cpuSeconds()
var consumed = 0
for try await delivery in consumer.deliveries {
    consumer.ack(delivery.deliveryTag)
    consumed += 1
    if consumed == total { break }
}
let consumeRate = Double(total) / seconds(start)
let consumeCPU = (cpuSeconds() - cpuStart) / Double(total) * 1e6
await consumer.close()
try setup.deleteQueue(queue)
setup.close()

func fmt(_ v: Double) -> String { String(format: "%.0f", v) }
print("queue: quorum, body 512 B, persistent; messages \(total), window \(window), baseline messages \(baselineTotal)")
print("publish, one wait per message (baseline): \(fmt(baselineRate)) msg/s")
print("publish, streamed confirms:               \(fmt(streamedRate)) msg/s  (\(String(format: "%.1f", streamedRate / baselineRate))x baseline, \(fmt(publishCPU)) µs CPU/msg)")
print("consume + ack (prefetch \(min(window, 65_535))):            \(fmt(consumeRate)) msg/s  (\(fmt(consumeCPU)) µs CPU/msg)")
