import EmulatorKit
import Foundation
import PushCore
import Testing

/// A worker with no key file anywhere (issue 51): its App ID names no `credentials_file` and no
/// `GOOGLE_APPLICATION_CREDENTIALS` is set, so its tokens come from the metadata server at
/// `GCE_METADATA_HOST` (the emulator's metadata-server mode), as on GKE with Workload Identity.
/// The shipped binary, a real broker.
@Suite(.serialized, .timeLimit(.minutes(3))) struct KeylessWorkerTests {
    @Test func aWorkerWithoutAKeyFileSendsAThousandJobsOnOneMetadataTokenAndWaitsOutItsOutage() async throws {
        let f = try await PipelineFixture(configureEmulator: { $0.metadataServer = true })
        try #"{"apps":[{"app_id":"shop-android","project_id":"\#(PipelineFixture.project)"}]}"#
            .write(toFile: f.appsFile, atomically: true, encoding: .utf8)
        let metadata = ["GCE_METADATA_HOST": "127.0.0.1:\(f.emulator.port)"]
        let (checked, said) = try runTool(try builtProduct("push-connector"), ["config", "check", f.appsFile], environment: metadata)
        #expect(checked == 0 && said.contains("shop-android: tokens from the metadata server at 127.0.0.1:\(f.emulator.port)"), "\(said)")

        // The metadata server is down when the worker first asks: the project waits, logged.
        f.emulator.setTokenEndpointFault(.unavailable(status: 503, retryAfterSeconds: nil))
        let worker = try WorkerProcess(f, ["--lanes", "1"], environment: metadata)
        try await f.publish([jobJSON("during-outage", tokens: ["dev-outage"])])
        try await eventually("the outage logged", timeout: .seconds(20)) { worker.log.contains("project paused") }
        #expect(worker.log.contains("reason=token") && worker.log.contains("OAUTH_UNAVAILABLE"), "\(worker.log.suffix(1_500))")
        #expect(f.emulator.stats().tokenFaultsServed >= 1)
        f.emulator.setTokenEndpointFault(nil)
        let first = try await f.results(1, timeout: .seconds(40))
        #expect(first.first?.outcome == .sent, "\(first)")

        try await f.publish((0..<1_000).map { jobJSON("keyless-\($0)", tokens: ["dev-keyless-\($0)"]) })
        let results = try await f.results(1_000, timeout: .seconds(60))
        #expect(results.allSatisfy { $0.outcome == .sent })
        #expect(f.emulator.stats().tokensIssued == 1, "one metadata token for 1 001 sends")
        #expect(try await worker.terminate(within: .seconds(20)) == 0)
    }
}
