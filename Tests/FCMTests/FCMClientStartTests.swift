import EmulatorKit
import Foundation
import Testing
@testable import FCM

/// `FCMClient.start`, the callback entry the worker uses for jobs of one target, against the
/// real emulator: the same outcomes and resend rules as `send`, whether the answer is read on
/// the transport's thread (token cached, permit free) or the send continues in a task. The 401
/// refreshed once is pinned through both entries in `FCMClientIntegrationTests`.
@Suite(.serialized, .timeLimit(.minutes(3))) struct FCMClientStartTests {
    @Test(arguments: [true, false])
    func sendsWithAFetchedTokenThenWithTheCachedOne(tls: Bool) async throws {
        let harness = try EmulatorHarness(tls: tls)
        defer { harness.stop() }
        #expect(await harness.start(token: "first").label == "sent")  // fetches the token in a task
        let outcome = await harness.start(token: "second")  // the cached token: no task until the answer
        guard case .sent(let name) = outcome else {
            Issue.record("expected sent, got \(outcome)")
            return
        }
        #expect(name.hasPrefix("projects/\(EmulatorHarness.project)/messages/"))
        #expect(harness.emulator.recordedMessages().map(\.token) == ["first", "second"])
        #expect(harness.emulator.stats().tokensIssued == 1)
    }

    @Test func anAnswerIsClassifiedAsSendClassifiesIt() async throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        #expect(await harness.start(token: "warm-up").label == "sent")
        let unregistered = await harness.start(token: "unregistered-1")
        let viaSend = await harness.send(token: "unregistered-2")
        #expect(unregistered.label == "invalid_token", "\(unregistered)")
        #expect(unregistered.failure?.code == viaSend.failure?.code)
        #expect(unregistered.failure?.httpStatus == 404)
    }

    @Test func tokenRefusedAgainAfterRefreshIsAnAuthFailureWithoutSecrets() async throws {
        // No pause after an auth failure, so that the second send reaches FCM again.
        let harness = try EmulatorHarness(configure: { $0.accessTokenEarlyExpiry = .zero },
                                          configureClient: { $0.rateLimit.configurationPause = .zero })
        defer { harness.stop() }
        let first = await harness.start(token: "never-1")  // no token cached: a task
        let second = await harness.start(token: "never-2")  // the refreshed token is cached: the callback path
        for outcome in [first, second] {
            #expect(outcome.label == "auth_failed", "\(outcome)")
            #expect(outcome.failure?.code == "UNAUTHENTICATED")
            #expect(!"\(outcome)".contains("ya29"))
        }
        #expect(harness.emulator.stats().count("UNAUTHENTICATED") == 4, "each send: once, then once more after a refresh")
        #expect(harness.emulator.recordedMessages().isEmpty)
    }

    @Test(arguments: [true, false])
    func goawayMidStreamLosesNoSendAndSendsNothingTwice(tls: Bool) async throws {
        let harness = try EmulatorHarness(tls: tls, configure: {
            $0.goawayEveryRequests = 25
            $0.latency = .fixed(.milliseconds(5))
        })
        defer { harness.stop() }
        #expect(await harness.start(token: "warm-up").label == "sent")
        let outcomes = await withTaskGroup(of: FCMOutcome.self) { group in
            for index in 0..<200 { group.addTask { await harness.start(token: "goaway-\(index)") } }
            return await group.reduce(into: [FCMOutcome]()) { $0.append($1) }
        }
        let failed = outcomes.filter { $0.label != "sent" }
        #expect(failed.isEmpty, "\(failed.count) failed, e.g. \(failed.prefix(3))")
        let tokens = harness.emulator.recordedMessages().compactMap(\.token).filter { $0.hasPrefix("goaway-") }
        #expect(Set(tokens) == Set((0..<200).map { "goaway-\($0)" }))
        #expect(tokens.count == 200, "each send reached FCM once, got \(tokens.count)")
    }

    @Test func moreSendsThanTransportPermitsWaitForOneAndAllGo() async throws {
        let harness = try EmulatorHarness(configure: { $0.latency = .fixed(.milliseconds(20)) },
                                          configureClient: { $0.transport.maxInFlight = 4 })
        defer { harness.stop() }
        #expect(await harness.start(token: "warm-up").label == "sent")
        let outcomes = await withTaskGroup(of: FCMOutcome.self) { group in
            for index in 0..<40 { group.addTask { await harness.start(token: "permit-\(index)") } }
            return await group.reduce(into: [FCMOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0.label == "sent" }, "\(outcomes.first { $0.label != "sent" }.map { "\($0)" } ?? "")")
        #expect(harness.emulator.recordedMessages().count == 41)
    }

    @Test func aQuotaAnswerPausesTheProjectAndTheNextStartIsHeldBackWithoutReachingFCM() async throws {
        let harness = try EmulatorHarness(configure: { $0.retryAfterSeconds = 90 })
        defer { harness.stop() }
        let quota = await harness.start(token: "quota-1")
        #expect(quota.failure?.code == "QUOTA_EXCEEDED", "\(quota)")
        let held = await harness.start(token: "would-be-sent")
        guard case .deferred(let failure, let retryAfter) = held else {
            Issue.record("expected deferred, got \(held)")
            return
        }
        #expect(failure.code == FCMClient.projectPausedCode)
        #expect((retryAfter ?? .zero) > .seconds(85))
        #expect(harness.emulator.recordedMessages().isEmpty)
    }

    @Test func aPacedSendWaitsForItsTurnThenGoes() async throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        harness.client.rateLimiter.setLimits([EmulatorHarness.project: 120])  // 2 a second, a burst of 2
        let started = ContinuousClock.now
        for index in 0..<4 { #expect(await harness.start(token: "paced-\(index)").label == "sent") }
        // Two go at once (the burst), the next two each wait for a token: 0.5 s apart.
        #expect(ContinuousClock.now - started >= .milliseconds(900))
        #expect(harness.emulator.recordedMessages().map(\.token) == (0..<4).map { "paced-\($0)" })
    }

    @Test func anInvalidProjectIdIsRefusedWithoutASend() async throws {
        let harness = try EmulatorHarness()
        defer { harness.stop() }
        let outcome = await withCheckedContinuation { continuation in
            harness.client.start(projectID: "not a project", messageBody: EmulatorHarness.body(token: "t"),
                                 credentials: .serviceAccount(harness.account)) { continuation.resume(returning: $0) }
        }
        #expect(outcome.failure?.code == "INVALID_PROJECT_ID", "\(outcome)")
        #expect(harness.emulator.recordedMessages().isEmpty)
    }
}
