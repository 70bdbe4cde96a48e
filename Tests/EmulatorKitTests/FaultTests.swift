import Foundation
import Testing
@testable import EmulatorKit

/// Faults on demand answer exactly FCM's error shape.
@Suite(.timeLimit(.minutes(1))) struct FaultTests {
    struct Expected: Sendable, CustomStringConvertible {
        let prefix: String, http: Int, status: String, errorCode: String, retryAfter: Bool
        var description: String { prefix }
    }

    static let tokenFaults: [Expected] = [
        Expected(prefix: "unregistered", http: 404, status: "NOT_FOUND", errorCode: "UNREGISTERED", retryAfter: false),
        Expected(prefix: "invalid", http: 400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", retryAfter: false),
        Expected(prefix: "mismatch", http: 403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH", retryAfter: false),
        Expected(prefix: "quota", http: 429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", retryAfter: true),
        Expected(prefix: "unavailable", http: 503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE", retryAfter: true),
        Expected(prefix: "internal", http: 500, status: "INTERNAL", errorCode: "INTERNAL", retryAfter: false),
        Expected(prefix: "thirdparty", http: 401, status: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR", retryAfter: false),
    ]

    @Test(arguments: tokenFaults)
    func tokenPrefixAnswersFCMsErrorShape(expected: Expected) throws {
        try withEmulator({ $0.retryAfterSeconds = 7 }) { emulator throws in
            let response = try send(emulator, message: "{\"token\":\"\(expected.prefix)-abc\",\"data\":{\"a\":\"b\"}}")
            #expect(response.status == expected.http)
            #expect(response.error["code"] as? Int == expected.http)
            #expect(response.error["status"] as? String == expected.status)
            #expect((response.error["message"] as? String)?.isEmpty == false)
            let details = try #require(response.error["details"] as? [[String: Any]])
            #expect(details.count == 1)
            #expect(details.first?["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
            #expect(details.first?["errorCode"] as? String == expected.errorCode)
            #expect(response.headers["retry-after"] == (expected.retryAfter ? "7" : nil))
            #expect(emulator.recordedMessages().isEmpty)
            #expect(emulator.stats().count(expected.errorCode) == 1)
        }
    }

    @Test func flakyTokenFailsNTimesThenSucceeds() throws {
        try withEmulator { emulator throws in
            let message = #"{"token":"flaky2-device"}"#
            #expect(try send(emulator, message: message).status == 503)
            #expect(try send(emulator, message: message).status == 503)
            #expect(try send(emulator, message: message).status == 200)
            #expect(try send(emulator, message: #"{"token":"flaky2-other"}"#).status == 503)
        }
    }

    @Test func quotaNTokenAnswers429WithRetryAfterNTimesThenSucceeds() throws {
        try withEmulator({ $0.retryAfterSeconds = 6 }) { emulator throws in
            let message = #"{"token":"quota1-device"}"#
            let first = try send(emulator, message: message)
            #expect(first.status == 429)
            #expect(first.headers["retry-after"] == "6")
            #expect(first.error["status"] as? String == "RESOURCE_EXHAUSTED")
            #expect(try send(emulator, message: message).status == 200)
            #expect(emulator.stats().count("QUOTA_EXCEEDED") == 1)
            #expect(try send(emulator, message: #"{"token":"quota-device"}"#).status == 429, "without a number: always")
            #expect(try send(emulator, message: #"{"token":"quota-device"}"#).status == 429)
        }
    }

    @Test func slowTokenAnswersAfterItsDelay() throws {
        try withEmulator { emulator throws in
            let start = ContinuousClock.now
            #expect(try send(emulator, message: #"{"token":"slow300-device"}"#).status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(300))
        }
    }

    @Test func latencyDoesNotBlockOtherStreams() throws {
        // 20 multiplexed requests, each answered only after 60 s: all 20 are received and
        // handled while the first is still held, so a held answer blocks nothing (no clock read).
        // Over TLS (ALPN h2): Debian's curl 7.88.1 cannot reuse prior-knowledge h2c connections (curl#10634).
        try withTLSEmulator({ $0.latency = .fixed(.seconds(60)) }) { emulator, ca in
            let url = emulator.baseURL + "/v1/projects/p/messages:send"
            var args = ["-s", "-Z", "--parallel-max", "20"]
            for i in 0..<20 {
                if i > 0 { args.append("--next") }
                args += ["--cacert", ca, "-o", "/dev/null", "-X", "POST", "-d", #"{"message":{"token":"t\#(i)"}}"#, url]
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = args
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }  // curl -Z outlives SIGTERM here
            let deadline = ContinuousClock.now + .seconds(30)
            while emulator.recordedMessages().count < 20, ContinuousClock.now < deadline { usleep(20_000) }
            #expect(emulator.recordedMessages().count == 20)
            #expect(process.isRunning, "an answer came back: the held answers were not held")
        }
    }

    @Test func latencyShareDelaysOnlyThatFractionOfSends() {
        func delayedCount(share: Double, sends: Int) -> Int {
            var configuration = EmulatorConfiguration()
            configuration.requireAuth = false
            configuration.latency = .fixed(.milliseconds(100))
            configuration.latencyShare = share
            let service = EmulatorService(configuration: configuration, accounts: [])
            let request = HTTPRequest(method: "POST", target: "/v1/projects/p/messages:send",
                                      headers: [("content-type", "application/json")], body: Array(#"{"message":{"token":"t"}}"#.utf8))
            return (0..<sends).filter { _ in
                let response = service.handle(request)
                return response.status == 200 && response.delay == .milliseconds(100)
            }.count
        }
        #expect(delayedCount(share: 1, sends: 100) == 100)
        #expect(delayedCount(share: 0, sends: 100) == 0)
        // Binomial(2000, 0.25): mean 500, standard deviation ~19; the bounds are ±7.8 deviations.
        #expect((350...650).contains(delayedCount(share: 0.25, sends: 2000)))
    }

    @Test func quotaPerMinuteAnswers429WithRetryAfter() throws {
        try withEmulator({ $0.quotaPerMinute = 2 }) { emulator throws in
            #expect(try send(emulator, project: "q", message: #"{"token":"t"}"#).status == 200)
            #expect(try send(emulator, project: "q", message: #"{"token":"t"}"#).status == 200)
            let third = try send(emulator, project: "q", message: #"{"token":"t"}"#)
            #expect(third.status == 429)
            #expect(third.errorCode == "QUOTA_EXCEEDED")
            #expect((1...60).contains(Int(third.headers["retry-after"] ?? "") ?? 0), "until the next minute")
            #expect(try send(emulator, project: "other", message: #"{"token":"t"}"#).status == 200)
        }
    }

    @Test func errorRateOneInjectsThatErrorEverywhere() throws {
        try withEmulator({ $0.errorRates = [.internal: 1.0] }) { emulator throws in
            let response = try send(emulator, message: #"{"token":"t"}"#)
            #expect(response.status == 500)
            #expect(response.errorCode == "INTERNAL")
        }
    }

    @Test func goawayEveryNRequestsMakesClientsReconnect() throws {
        // Over TLS (ALPN h2): Debian's curl 7.88.1 cannot reuse prior-knowledge h2c connections (curl#10634).
        try withTLSEmulator({ $0.goawayEveryRequests = 2 }) { emulator, ca in
            let url = emulator.baseURL + "/_emulator/health"
            let args = ["-s", "--cacert", ca, "-w", "%{http_code} %{num_connects}\n"]
                + Array(repeating: ["-o", "/dev/null", url], count: 6).flatMap { $0 }
            let (out, status) = try Curl.execute(args, input: nil)
            #expect(status == 0)
            let lines = out.split(separator: "\n")
            #expect(lines.count == 6)
            #expect(lines.allSatisfy { $0.hasPrefix("200 ") })
            let connects = lines.compactMap { Int($0.split(separator: " ")[1]) }.reduce(0, +)
            #expect(connects == 3)
        }
    }
}
