import Foundation
import Testing
@testable import EmulatorKit

@Suite(.timeLimit(.minutes(1))) struct TLSTests {
    @Test func tlsNegotiatesHTTP2ByALPNAndVerifiesAgainstTheDevCA() throws {
        try withTLSEmulator { emulator, ca in
            #expect(emulator.baseURL.hasPrefix("https://127.0.0.1:"))
            let response = try Curl.run("POST", emulator.baseURL + "/v1/projects/p/messages:send",
                                        body: #"{"message":{"token":"t","notification":{"title":"x"}}}"#, extra: ["--cacert", ca])
            #expect(response.status == 200)
            #expect(response.httpVersion == "2")
            #expect(emulator.recordedMessages().count == 1)
        }
    }

    @Test func tlsServesHTTP11ClientsByALPN() throws {
        try withTLSEmulator { emulator, ca in
            let response = try Curl.run("GET", emulator.baseURL + "/_emulator/stats", http2: false, extra: ["--cacert", ca])
            #expect(response.status == 200)
            #expect(response.httpVersion == "1.1")
        }
    }

    @Test func tlsClientWithoutTheCARefusesTheCertificate() throws {
        try withTLSEmulator { emulator, _ in
            let (_, status) = try Curl.execute(["-s", "-o", "/dev/null", emulator.baseURL + "/_emulator/health"], input: nil)
            #expect(status == 60)
        }
    }
}
