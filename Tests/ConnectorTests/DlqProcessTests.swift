import AMQP
import Foundation
import PushCore
import Testing
@testable import Connector

/// `dlq replay` as a real process, killed with SIGKILL in the middle.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DlqProcessTests {
    /// `--window 100`: up to 100 publishes in flight, each DLQ copy acked after its confirm. A
    /// SIGKILL halfway loses nothing, and the second run leaves every job in the job queue with at
    /// most 100 of them twice (the window in flight at the kill).
    @Test func replayWithAWindowKilledHalfwayAndRunAgainLosesNothingAndDuplicatesAtMostTheWindow() async throws {
        let f = try await PipelineFixture()
        let total = 600, window = 100
        let ids = (0..<total).map { "kill-\($0)" }
        try f.seedDLQ(ids.map { deadLetter($0) })

        let process = Process()
        process.executableURL = URL(fileURLWithPath: try builtProduct("push-connector"))
        process.arguments = ["dlq", "replay", "--window", "\(window)", "--rate", "300"] + f.cliBroker
        process.environment = ["PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(30)
        while try f.messageCount(f.topology.jobsQueue) < total / 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)

        // The broker requeues what the dead process held; then every job is somewhere.
        let settled = ContinuousClock.now + .seconds(20)
        var inJobs = 0, inDLQ = 0
        repeat {
            try await Task.sleep(for: .milliseconds(50))
            inJobs = try f.messageCount(f.topology.jobsQueue)
            inDLQ = try f.messageCount(f.topology.deadLetterQueue)
        } while inJobs + inDLQ < total && ContinuousClock.now < settled
        #expect(inJobs > 0 && inDLQ > 0, "the kill did not land halfway: \(inJobs) replayed, \(inDLQ) in the DLQ")
        #expect(inJobs + inDLQ >= total && inJobs + inDLQ <= total + window, "replayed \(inJobs) + DLQ \(inDLQ) vs \(total)")

        // Running it again finishes the job.
        let (code, out, err) = await runCLI(["dlq", "replay", "--window", "\(window)"] + f.cliBroker)
        #expect(code == 0, "\(err)")
        #expect(out.hasPrefix("replayed \(inDLQ) job(s)"), "\(out)")
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 0)
        let replayed = jobIDs(try f.drain(f.topology.jobsQueue)).compactMap { $0 }
        #expect(Set(replayed) == Set(ids), "lost: \(Set(ids).subtracting(replayed).sorted())")
        #expect(replayed.count <= total + window, "\(replayed.count - total) duplicates")
    }
}
