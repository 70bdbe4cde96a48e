import AMQP
import Foundation
import PushCore
import Testing

/// Jobs over `--max-job-bytes` are never held whole (second audit, finding 10): the worker reads
/// their frames and drops them as they come, keeping the first 64 KiB for the dead letter, so
/// that a few jobs of 12 MiB cost it kilobytes, not their size (12 MiB: RabbitMQ 4 refuses
/// messages over its `max_message_size` of 16 MiB at publish; 3.10 takes up to 128 MiB). The
/// shipped binary, a real broker.
@Suite(.serialized, .timeLimit(.minutes(3))) struct OversizeJobTests {
    /// The peak resident memory of a process, in bytes (`VmHWM`).
    static func peakMemory(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        return try #require(Int(line.split(separator: " ").dropFirst().first ?? "")) * 1_024
    }

    @Test func jobsOfTwelveMebibytesLeaveTheWorkersMemoryWhereItWasAndCannotBeReplayed() async throws {
        let f = try await PipelineFixture()
        let worker = try WorkerProcess(f, ["--lanes", "1", "--prefetch-bytes", "8388608"])
        try await f.publish([jobJSON("warm-up", tokens: ["dev-warm"])])
        _ = try await f.results(1, timeout: .seconds(20))
        let before = try Self.peakMemory(worker.process.processIdentifier)

        let padding = String(repeating: "x", count: 12 << 20)
        let bodies = (0..<5).map { jobJSON("huge-\($0)", tokens: ["dev-huge-\($0)"], extra: #","data":{"pad":"\#(padding)"}"#) }
        try await f.publish(bodies)
        let dead = try await f.take(5, from: f.topology.deadLetterQueue, timeout: .seconds(60))
        let grown = try Self.peakMemory(worker.process.processIdentifier) - before
        #expect(grown < 24 << 20, "five 12 MiB jobs raised the worker's peak memory by \(grown >> 20) MiB")
        for letter in dead {
            #expect(letter.body.count == 65_536)
            #expect(letter.properties.headers[DeadLetterHeader.truncatedFrom] == .int(Int64(bodies[0].utf8.count)))
            #expect(letter.properties.headers[DeadLetterHeader.code]?.stringValue == "INVALID_JOB")
        }
        #expect(f.emulator.recordedMessages().allSatisfy { $0.token == "dev-warm" })

        // Put back, a replay leaves them where they are and says why.
        try f.seedDLQ(dead.map { ($0.body, $0.properties) })
        let (code, out, err) = await runCLI(["dlq", "replay"] + f.cliBroker)
        #expect(code != 0 || out.contains("replayed 0"), "\(out)\(err)")
        #expect(err.contains("over --max-job-bytes") && err.contains("publish it again in smaller jobs"), "\(err)")
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 5)
        #expect(try await worker.terminate(within: .seconds(20)) == 0)
    }
}
