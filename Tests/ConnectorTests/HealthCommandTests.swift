import Foundation
@testable import HTTPServer
import Testing
@testable import Connector

/// Answers GET /ok with 200, /down with 503, /slow after 3 s.
private struct StatusHandler: HTTPHandler {
    func respond(to request: HTTPRequest) -> HTTPReply {
        switch request.path {
        case "/ok": return .now(HTTPResponse(status: 200, contentType: "text/plain", text: "ok"))
        case "/slow":
            return .later {
                try? await Task.sleep(for: .seconds(3))
                return HTTPResponse(status: 200, contentType: "text/plain", text: "late")
            }
        default: return .now(HTTPResponse(status: 503, contentType: "text/plain", text: "broker down"))
        }
    }
}

/// `push-connector health URL` as a container HEALTHCHECK runs it: the real binary against a
/// real HTTP server (the project's libmicrohttpd one).
@Suite(.timeLimit(.minutes(1))) struct HealthCommandTests {
    @Test func exitsZeroOn2xxAndOneOnAnotherStatusARefusalOrATimeout() async throws {
        var configuration = MicroHTTPServer.Configuration()
        configuration.port = 0
        let server = try MicroHTTPServer(configuration: configuration, handler: StatusHandler())
        let base = "http://127.0.0.1:\(server.port)"

        var (code, out, err) = try runBinary(["health", base + "/ok"])
        #expect(code == 0)
        #expect(out == "healthy: \(base)/ok answered 200\n", "\(out)\(err)")

        (code, _, err) = try runBinary(["health", base + "/down"])
        #expect(code == 1)
        #expect(err == "unhealthy: \(base)/down answered 503\n", "\(err)")

        (code, _, err) = try runBinary(["health", "--timeout", "1", base + "/slow"])
        #expect(code == 1)
        #expect(err.hasPrefix("unhealthy: \(base)/slow: ") && err.contains("imeout"), "\(err)")

        // A port nothing listens on: the server's own port once it is stopped.
        await server.stop()
        (code, _, err) = try runBinary(["health", base + "/ok"])
        #expect(code == 1)
        #expect(err.hasPrefix("unhealthy: \(base)/ok: "), "\(err)")

        (code, _, err) = try runBinary(["health", "ftp://127.0.0.1/"])
        #expect(code == 2)
        #expect(err.contains("URL must start with http:// or https://"), "\(err)")
    }
}
