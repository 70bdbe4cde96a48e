import Foundation
import PushCore
import Testing
@testable import Connector

/// Replicas whose clocks differ by minutes, each a shipped worker under libfaketime (its wall
/// clock moved, its monotonic clock left alone): what they agree on and what each reads on its
/// own clock (docs/operations.md, "Clocks").
@Suite(.serialized, .timeLimit(.minutes(3))) struct ClockSkewTests {
    /// libfaketime's library, from Debian's `libfaketime` (scripts/install-deps.sh installs it).
    static func library() throws -> String {
        let candidates = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? [])
            .map { "/usr/lib/\($0)/faketime/libfaketime.so.1" }
        return try #require(candidates.first { FileManager.default.fileExists(atPath: $0) }, "libfaketime is not installed")
    }

    static func skewed(_ offset: String) throws -> [String: String] {
        ["LD_PRELOAD": try library(), "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"]
    }

    /// Under libfaketime the binary printed its general usage: Swift's `CommandLine.arguments`
    /// walks back from `environ`, which the preloaded library had moved (CProcessArguments).
    @Test(arguments: ["push-connector", "fcm-emulator"])
    func theShippedBinaryReadsItsArgumentsUnderLibfaketime(binary: String) throws {
        let (code, text) = try runTool(try builtProduct(binary), binary == "push-connector" ? ["cancel", "--help"] : ["--help"],
                                       environment: try Self.skewed("+5m"))
        #expect(code == 0, "\(text)")
        #expect(text.hasPrefix(binary == "push-connector" ? "usage: push-connector cancel" : "usage: fcm-emulator"), "\(text)")
    }

    /// A pause (1 h) and a cancel written by an operator's host 4 minutes ahead hold on a worker
    /// on time (the records start in its future) and on one as far ahead; each reads a job's
    /// `not_after` on its own clock (the one ahead expires a job due in 2 minutes) and stamps its
    /// results with it. The one ahead signs OAuth assertions the token endpoint refuses (`iat` in
    /// its future; Google, like the emulator, allows about a minute): its project waits in the
    /// retry tiers, logged, and a worker on time sends the job afterwards, once.
    ///
    /// Clocks are only moved ahead: libfaketime 0.9.10 shifts timerfd deadlines by the offset even
    /// with the monotonic clock left alone, so behind it every Swift `Task.sleep` lasts minutes.
    @Test func replicasFourMinutesApartAgreeOnPausesAndCancelsAndEachReadsNotAfterOnItsClock() async throws {
        let f = try await PipelineFixture()
        try f.addApp("shop-ios")
        let common = ["--amqp-url", f.vhostURL, "--prefix", f.topology.prefix]
        for command in [["pause", "--app-id", "shop-ios", "--for", "1h", "--reason", "skew"], ["cancel", "--campaign", "STOP", "--reason", "skew"]] {
            let (code, text) = try runTool(try builtProduct("push-connector"), command + common, environment: try Self.skewed("+4m"))
            #expect(code == 0, "\(command): \(text)")
        }
        let dueSoon = Timestamp(secondsSince1970: Date().timeIntervalSince1970 + 120)
        func jobs(_ name: String) -> [String] {
            (0..<5).map { jobJSON("\(name)-stop-\($0)", tokens: ["\(name)-stop-\($0)"], extra: #","campaign":"STOP""#) }
                + (0..<5).map { jobJSON("\(name)-ios-\($0)", tokens: ["\(name)-ios-\($0)"], app: "shop-ios") }
                + [jobJSON("\(name)-due", tokens: ["\(name)-due"], extra: #","not_after":"\#(dueSoon)""#),
                   jobJSON("\(name)-go", tokens: ["\(name)-go"])]
        }
        func check(_ results: [SendResult], _ name: String, skew: Double) {
            let now = Date().timeIntervalSince1970
            #expect(results.filter { $0.jobID.contains("-stop-") }.map(\.outcome) == Array(repeating: .cancelled, count: 5), "\(name)")
            #expect(results.first { $0.jobID == "\(name)-due" }?.outcome == (skew > 0 ? .expired : .sent), "\(name)")
            #expect(results.allSatisfy { abs($0.completedAt.secondsSince1970 - (now + skew)) < 30 },
                    "\(name): \(results.map(\.completedAt)) against \(now + skew)")
        }

        func results(_ count: Int, from worker: WorkerProcess) async throws -> [SendResult] {
            do { return try await f.results(count, timeout: .seconds(40)) } catch {
                throw FixtureError("\(error); the worker's log: \(worker.log)")
            }
        }

        let behind = try WorkerProcess(f, ["--log-level", "warn"])
        try await f.publish(jobs("behind"))
        let late = try await results(7, from: behind)
        check(late, "behind", skew: 0)
        #expect(late.first { $0.jobID == "behind-go" }?.outcome == .sent)
        #expect(try await behind.terminate(within: .seconds(15)) == 0, "\(behind.log)")

        let ahead = try WorkerProcess(f, ["--log-level", "warn"], environment: try Self.skewed("+4m"))
        try await f.publish(jobs("ahead"))
        let early = try await results(6, from: ahead)
        check(early, "ahead", skew: 240)
        try await eventually("the refused token logged") { ahead.log.contains("invalid_grant") && ahead.log.contains("clock") }
        #expect(!f.emulator.recordedMessages().contains { $0.token == "ahead-go" }, "sent with a refused token")
        #expect(try await ahead.terminate(within: .seconds(15)) == 0, "\(ahead.log)")

        let onTime = try WorkerProcess(f, ["--log-level", "warn"])
        let held = try await results(1, from: onTime)
        #expect(held.map(\.jobID) == ["ahead-go"] && held.first?.outcome == .sent, "\(held)")
        #expect(f.emulator.recordedMessages().filter { $0.token == "ahead-go" }.count == 1)
        #expect(!f.emulator.recordedMessages().contains { $0.token?.contains("-ios-") == true }, "a paused App ID's job was sent")
        #expect(try await onTime.terminate(within: .seconds(15)) == 0, "\(onTime.log)")
    }
}
