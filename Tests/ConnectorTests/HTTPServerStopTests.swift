import BrokerHarness
import Foundation
import Glibc
import HTTPServer
import Synchronization
import Testing

/// `MicroHTTPServer.stop` with requests in flight: libmicrohttpd aborts the process when stopped
/// with a suspended connection, so a request that comes once the stop began (on a connection kept
/// alive) is answered 503 at once instead of being suspended, and the one already suspended is
/// answered before the daemon stops. Real server, raw sockets.
@Suite(.serialized, .timeLimit(.minutes(2))) struct HTTPServerStopTests {
    /// `/slow` answers 200 after `delay` (a suspended request); anything else 200 at once.
    struct SlowHandler: HTTPHandler {
        let delay: Duration
        func respond(to request: HTTPRequest) -> HTTPReply {
            guard request.path == "/slow" else { return .now(HTTPResponse(status: 200, text: "now")) }
            let delay = delay
            return .later {
                try? await Task.sleep(for: delay)
                return HTTPResponse(status: 200, text: "slow")
            }
        }
    }

    @Test func aRequestAfterTheStopBeganIsAnswered503AndTheSuspendedOneStillGetsItsAnswer() async throws {
        var configuration = MicroHTTPServer.Configuration()
        configuration.port = 0
        let server = try MicroHTTPServer(configuration: configuration, handler: SlowHandler(delay: .seconds(3)))
        // B: a connection kept alive, one request answered on it.
        let kept = try RawClient.connect(port: server.port)
        defer { close(kept) }
        try RawClient.send(kept, "GET /now HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try RawClient.response(kept)?.hasPrefix("HTTP/1.1 200") == true)
        // A: a request suspended while its work runs; the stop waits for it.
        let suspended = try RawClient.connect(port: server.port)
        defer { close(suspended) }
        try RawClient.send(suspended, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        try await waitUntil(timeout: .seconds(10), "the request is suspended") { server.suspendedRequests == 1 }
        let stopping = Task { await server.stop(deadline: .seconds(20)) }
        try await waitUntil(timeout: .seconds(10), "the stop began") { server.isStopping }

        try RawClient.send(kept, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        let late = try RawClient.response(kept) ?? ""
        #expect(late.hasPrefix("HTTP/1.1 503") && late.contains("the server is stopping"), "\(late)")
        let answered = try RawClient.response(suspended) ?? ""
        #expect(answered.hasPrefix("HTTP/1.1 200") && answered.hasSuffix("slow"), "\(answered)")
        await stopping.value
        #expect(server.suspendedRequests == 0)
    }

    /// The listen socket is closed with the daemon (it once leaked one per server): ten servers
    /// started and stopped leave the process's descriptors where they were (one leaked each before).
    @Test func startedAndStoppedServersLeaveNoDescriptorBehind() async throws {
        var configuration = MicroHTTPServer.Configuration()
        configuration.port = 0
        let before = OpenDescriptors.count
        for _ in 0..<10 {
            let server = try MicroHTTPServer(configuration: configuration, handler: SlowHandler(delay: .zero))
            await server.stop()
        }
        let after = OpenDescriptors.count
        #expect(after - before < 5, "open descriptors \(before) → \(after)")
    }

    /// libmicrohttpd's `MHD_quiesce_daemon` races its own worker threads on an epoll daemon
    /// (both remove the listen socket from the epoll set; the loser aborts the process: "Failed
    /// to remove listen FD from epoll set"), so `stop` does not quiesce. Servers stopped while
    /// clients keep connecting, many times over, all stop, and the connections made during the
    /// stop are answered or closed, never left hanging.
    @Test func serversStoppedWhileClientsConnectNeverAbort() async throws {
        var configuration = MicroHTTPServer.Configuration()
        configuration.port = 0
        configuration.threads = 4
        for _ in 0..<2_000 {
            let server = try MicroHTTPServer(configuration: configuration, handler: SlowHandler(delay: .zero))
            let port = server.port
            let stopped = Atomic<Bool>(false)
            async let knocked = onItsOwnThread {
                while !stopped.load(ordering: .relaxed) {
                    guard let fd = try? RawClient.connect(port: port) else { return }
                    close(fd)
                }
            }
            await server.stop()
            stopped.store(true, ordering: .relaxed)
            await knocked
        }
    }
}
