import AMQP
import Foundation
import PushCore
import Testing
@testable import Connector

/// `dlq export` onto a disk that fills up: it fails with a one-line message, leaves no partial
/// FILE (nor its temporary twin) and the DLQ unchanged. A real 32 KiB tmpfs, a real broker
/// (issue 32, low item).
@Suite(.serialized, .timeLimit(.minutes(2))) struct DlqExportFullDiskTests {
    @Test func anExportThatRunsOutOfDiskLeavesNoPartialFile() async throws {
        let f = try await PipelineFixture()
        let padding = String(repeating: "p", count: 900)
        try f.seedDLQ((0..<200).map { deadLetter("full-\($0)", campaign: padding) })
        let mountPoint = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: mountPoint) }
        func run(_ arguments: [String]) throws -> Int32 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: arguments[0])
            p.arguments = Array(arguments.dropFirst())
            try p.run()
            p.waitUntilExit()
            return p.terminationStatus
        }
        try #require(try run(["/bin/mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", mountPoint]) == 0, "cannot mount a tmpfs (the tests run as root)")
        defer { _ = try? run(["/bin/umount", mountPoint]) }

        let file = mountPoint + "/dlq.jsonl"
        let (code, _, err) = await runCLI(["dlq", "export", file] + f.cliBroker)
        #expect(code == 1, "\(err)")
        #expect(err.contains("nothing written to \(file)") && err.contains("No space left on device"), "\(err)")
        #expect(err.split(separator: "\n").count == 1)
        let left = try FileManager.default.contentsOfDirectory(atPath: mountPoint)
        #expect(left.isEmpty, "left behind: \(left)")
        #expect(try f.messageCount(f.topology.deadLetterQueue) == 200)
    }
}
