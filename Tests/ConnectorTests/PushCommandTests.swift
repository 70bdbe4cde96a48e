import Foundation
import Testing
@testable import Connector

/// `push-connector push` against the real emulator.
@Suite(.serialized, .timeLimit(.minutes(3))) struct PushCommandTests {
    @Test func pushSendsOneComposedMessageAndPrintsTheOutcome() async throws {
        let f = try await PipelineFixture()
        let (code, out, err) = await runCLI(["push", "--config", f.appsFile, "--app-id", "shop-android", "--token", "dev-cli",
                                             "--title", "Ciao", "--data", "pushdata.k=v", "--fcm-url", f.emulator.baseURL])
        #expect(code == 0, "\(err)")
        #expect(out.hasPrefix("sent mn_message_id=mnid2m."))
        let recorded = try #require(f.emulator.recordedMessages().first)
        #expect(recorded.token == "dev-cli")
        #expect(recorded.messageJSON.contains("\"pushdata.k\":\"v\""))
        #expect(recorded.messageJSON.contains("\"analytics_label\":\"promo\""))
    }

    @Test func pushReportsAnUnregisteredTokenAndExits1() async throws {
        let f = try await PipelineFixture()
        let (code, out, _) = await runCLI(["push", "--config", f.appsFile, "--app-id", "shop-android", "--token", "unregistered-cli",
                                           "--title", "Ciao", "--fcm-url", f.emulator.baseURL])
        #expect(code == 1)
        #expect(out.hasPrefix("invalid_token"))
        #expect(out.contains("UNREGISTERED"))
    }

    @Test func pushRefusesContradictoryOptions() async {
        #expect(await runCLI(["push", "--config", "a", "--app-id", "x", "--token", "t", "--topic", "n"]).0 == 2)
        #expect(await runCLI(["push", "--config", "a", "--app-id", "x", "--token", "t", "--data-only", "--title", "T"]).0 == 2)
        #expect(await runCLI(["push", "--config", "a", "--app-id", "x", "--token", "t", "--data", "novalue"]).0 != 0)
    }
}
