// worker-bench: end-to-end throughput of the send worker against a real broker, with real FCM
// dispatch (fcm-emulator) and with dispatch replaced by an instant "sent" (the broker-bound
// limit), in the same run. Prints jobs/s and worker CPU µs per job for each, and their ratio.
//
//   worker-bench --amqp-url URL --fcm-url URL [--ca-file F] --service-account F
//                [--jobs 1000] [--recipients 1] [--prefetch 200] [--lanes 1]
import AMQP
import ConfigurationFiles
import Connector
import FCM
import Foundation
import PushCore
import PushWorker
import ServiceRuntime

/// Dispatch replaced by an instant success: what the broker side alone costs.
struct InstantSender: PushSender {
    func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void) {
        completion(.sent(messageName: "projects/bench/messages/0"))
    }
}

func option(_ name: String, _ fallback: String? = nil) -> String {
    let args = CommandLine.arguments
    if let i = args.firstIndex(of: name), i + 1 < args.count { return args[i + 1] }
    guard let fallback else { fatalError("missing \(name)") }
    return fallback
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

let jobs = Int(option("--jobs", "1000"))!
let recipients = Int(option("--recipients", "1"))!
let settings = try AMQPCredentialResolver(environment: [:]).settings(url: option("--amqp-url"))
let accountPath = option("--service-account")
let directory = NSTemporaryDirectory() + "worker-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
let appsPath = directory + "/apps.json"
try #"{"apps":[{"app_id":"bench","project_id":"bench-project","credentials_file":"\#(accountPath)","extra_options":{"android":{"priority":"high"}}}]}"#
    .write(toFile: appsPath, atomically: true, encoding: .utf8)
let registry = try AppConfigurationFile.load(appsPath)

func run(mode: String, sender: any PushSender) async throws -> (rate: Double, cpuMicros: Double) {
    let topology = Topology(prefix: "bench-\(mode)-\(getpid())", retryDelaysSeconds: [5])
    let client = try AMQPChannelClient(settings: settings)
    try topology.declare(on: client)
    // Preload.
    let publisher = try await ConfirmingPublisher.connect(settings: settings)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for j in 0..<jobs {
            let list = (0..<recipients).map { #"{"token":"bench-\#(j)-\#($0)"}"# }.joined(separator: ",")
            let body = Data(#"{"job_id":"bench-\#(j)","app_id":"bench","notification":{"title":"Hello","body":"World"},"data":{"pushdata.k":"v"},"recipients":[\#(list)]}"#.utf8)
            group.addTask { try await publisher.publish(exchange: topology.jobsExchange, routingKey: topology.jobsRoutingKey, body: body) }
        }
        try await group.waitForAll()
    }
    await publisher.close()
    var configuration = SendWorker.Configuration(settings: settings, topology: topology)
    configuration.prefetch = UInt16(option("--prefetch", "200"))!
    configuration.lanes = Int(option("--lanes", "1"))!
    let worker = SendWorker(configuration: configuration,
                            processor: JobProcessor(registry: registry, sender: sender, topology: topology),
                            logger: Logger(component: "bench", minimumLevel: .warning))
    let shutdown = ShutdownSignal()
    let cpu0 = cpuSeconds()
    let t0 = ContinuousClock.now
    let task = Task { await worker.run(until: shutdown) }
    // Every job acked: its results were confirmed by the broker before (ack after confirm).
    while worker.counters.acked.load(ordering: .relaxed) < jobs {
        try await Task.sleep(for: .milliseconds(5))
    }
    let elapsed = (ContinuousClock.now - t0)
    let cpu = cpuSeconds() - cpu0
    shutdown.trigger()
    await task.value
    for q in topology.queues { _ = try? client.deleteQueue(q.name) }
    client.close()
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (Double(jobs) / seconds, cpu * 1e6 / Double(jobs))
}

var fcm = FCMClient.Configuration()
fcm.baseURL = option("--fcm-url")
fcm.transport.caFile = CommandLine.arguments.contains("--ca-file") ? option("--ca-file") : nil
let fcmClient = FCMClient(configuration: fcm)
let fcmSender = try FCMPushSender(client: fcmClient, registry: registry)
let instant = try await run(mode: "instant", sender: InstantSender())
let real = try await run(mode: "fcm", sender: fcmSender)
print(String(format: "jobs=%d recipients=%d | instant: %.0f jobs/s %.0f µs/job | fcm: %.0f jobs/s %.0f µs/job | fcm/instant: rate %.2f cpu %.2f",
             jobs, recipients, instant.rate, instant.cpuMicros, real.rate, real.cpuMicros, real.rate / instant.rate, real.cpuMicros / instant.cpuMicros))
fcmClient.shutdown()
