// fcm-bench: drives FCMClient against a running fcm-emulator and prints one line of figures:
//   sends/s, client CPU µs per send (getrusage of this process over the timed phase) and the
//   process's peak RSS.
// Usage: fcm-bench --url URL --service-account FILE [--ca-file FILE] --concurrency C --requests N
//                  [--transport nghttp2|curl] [--curl-loops N]
import FCM
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var url = ""
    var serviceAccount = ""
    var caFile: String?
    var concurrency = 1
    var requests = 1000
    var loops = 1
    var transport = FCMTransportKind.nghttp2

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next() ?? ""
            switch flag {
            case "--url": url = value
            case "--service-account": serviceAccount = value
            case "--ca-file": caFile = value
            case "--concurrency": concurrency = Int(value) ?? 1
            case "--requests": requests = Int(value) ?? 1000
            case "--curl-loops": loops = Int(value) ?? 1
            case "--transport":
                guard let kind = FCMTransportKind(rawValue: value) else {
                    FileHandle.standardError.write(Data("--transport must be nghttp2 or curl\n".utf8))
                    exit(2)
                }
                transport = kind
            default:
                FileHandle.standardError.write(Data("unknown flag \(flag)\n".utf8))
                exit(2)
            }
        }
    }
}

func peakRSSKiB() -> Int {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Int(usage.ru_maxrss)
}

func cpuMicroseconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    let user = Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec)
    let system = Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec)
    return user + system
}

final class Counter: Sendable {
    let next = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
}

let options = Options(CommandLine.arguments)
let account = try ServiceAccount.load(contentsOf: options.serviceAccount)
var configuration = FCMClient.Configuration()
configuration.baseURL = options.url
configuration.transport.caFile = options.caFile
configuration.transport.maxInFlight = options.concurrency
configuration.transport.loops = options.loops
configuration.transportKind = options.transport
// The client's own per-project limiter defaults to FCM's quota (600 000/min = 10 000/s), which
// capped earlier runs at ~13 k/s whatever the transport; the bench measures the client instead.
configuration.rateLimit.perMinute = 1_000_000_000
let client = FCMClient(configuration: configuration)
let project = account.projectID

func body(_ index: Int) -> [UInt8] {
    Array(#"{"message":{"token":"bench-\#(index)","notification":{"title":"Hello","body":"World"}},"validate_only":false}"#.utf8)
}

// Warm-up: token fetch and connection setup stay out of the timed phase.
let warmUp = await client.send(projectID: project, messageBody: body(0), credentials: .serviceAccount(account))
guard case .sent = warmUp else {
    FileHandle.standardError.write(Data("warm-up failed: \(warmUp)\n".utf8))
    exit(1)
}

let counter = Counter()
let cpuBefore = cpuMicroseconds()
let start = ContinuousClock.now
await withTaskGroup(of: Void.self) { group in
    for _ in 0..<options.concurrency {
        group.addTask {
            while true {
                let index = counter.next.wrappingAdd(1, ordering: .relaxed).oldValue
                if index >= options.requests { return }
                let outcome = await client.send(projectID: project, messageBody: body(index), credentials: .serviceAccount(account))
                if case .sent = outcome {} else { counter.failures.wrappingAdd(1, ordering: .relaxed) }
            }
        }
    }
}
let elapsed = ContinuousClock.now - start
let cpu = cpuMicroseconds() - cpuBefore
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let failures = counter.failures.load(ordering: .relaxed)
print(String(format: "sends=%d failures=%d seconds=%.3f sends_per_s=%.0f cpu_us_per_send=%.1f peak_rss_kib=%d",
             options.requests, failures, seconds, Double(options.requests) / seconds, cpu / Double(options.requests),
             peakRSSKiB()))
client.shutdown()
