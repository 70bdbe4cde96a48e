import AMQP
import Foundation
import Glibc
import PushCore
@testable import PushEvents
@testable import ServiceRuntime
import Testing
@testable import Connector

/// The events endpoint under hostile or exhausting clients, against the real server and broker.
@Suite(.serialized, .timeLimit(.minutes(3))) struct EventsHardeningTests {
    static let key = "k-0123456789abcdef"

    @Test func twoThousandIdleConnectionsLeaveTheEndpointServing() async throws {
        FileDescriptorLimit.raiseSoftToHard()
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil) {
            $0.perIPConnectionLimit = 0  // all from 127.0.0.1: the per-IP cap has its own test
        }
        var idle: [Int32] = []
        defer { idle.forEach { _ = close($0) } }
        for _ in 0..<2000 { idle.append(try RawClient.connect(port: events.service.httpPort ?? 0)) }
        let (status, body) = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("click", "mnid2m.1.2.3.4.5"))
        #expect(status == 202, "\(body)")
        #expect(try f.messageCount(f.topology.eventsQueue) == 1)
        // The idle connections are still being served too.
        let last = try #require(idle.last)
        try RawClient.send(last, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try RawClient.response(last)?.hasPrefix("HTTP/1.1 200") == true)
        await events.stop()
    }

    @Test func connectionsFromOneAddressBeyondThePerIPLimitAreRefused() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil) { $0.perIPConnectionLimit = 3 }
        let port = events.service.httpPort ?? 0
        let allowed = try (0..<3).map { _ in try RawClient.connect(port: port) }
        defer { allowed.forEach { _ = close($0) } }
        // Wait until the server holds the three, then a fourth is closed without an answer.
        try RawClient.send(allowed[2], "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try RawClient.response(allowed[2])?.hasPrefix("HTTP/1.1 200") == true)
        let extra = try RawClient.connect(port: port)
        defer { _ = close(extra) }
        try? RawClient.send(extra, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try RawClient.response(extra) == nil)
        await events.stop()
    }

    @Test func aSlowUploadIsCutAtTheRequestDeadline() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil) { $0.requestDeadline = .seconds(2) }
        let fd = try RawClient.connect(port: events.service.httpPort ?? 0)
        defer { _ = close(fd) }
        try RawClient.send(fd, "POST /event HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
        // One byte every 300 ms keeps the connection active (the inactivity timeout is 30 s)...
        var sent = 0
        let giveUp = ContinuousClock.now + .seconds(60)
        while RawClient.isOpen(fd), ContinuousClock.now < giveUp, sent < 990 {
            guard (try? RawClient.send(fd, " ")) != nil else { break }
            sent += 1
            try await Task.sleep(for: .milliseconds(300))
        }
        // ... but the whole request had 2 s: the server cut it, without an answer.
        #expect(!RawClient.isOpen(fd), "still open after \(sent) bytes")
        #expect(events.service.httpConnectionsCutAtDeadline == 1)
        #expect(try f.messageCount(f.topology.eventsQueue) == 0)
        await events.stop()
    }

    /// Second audit, finding 11: every slot held by connections trickling their headers (each
    /// address under its limit) no longer keeps real clients out for the request deadline (30 s):
    /// at three quarters of the connection limit, requests still arriving after 2 s are cut.
    @Test func connectionsTricklingHeadersAreCutWithinSecondsWhenTheyFillTheServer() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil) {
            $0.perIPConnectionLimit = 0
            $0.connectionLimit = 40
        }
        let port = events.service.httpPort ?? 0
        var slow: [Int32] = []
        defer { slow.forEach { _ = close($0) } }
        for _ in 0..<40 {
            let fd = try RawClient.connect(port: port)
            try RawClient.send(fd, "POST /event HTTP/1.1\r\nHost: t\r\n")
            slow.append(fd)
        }
        try await Task.sleep(for: .seconds(3))
        let (status, body) = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("click", "mnid2m.1.2.3.4.9"))
        #expect(status == 202, "\(body)")
        // Cut until the pressure is off: fewer than three quarters of the limit stay.
        #expect(slow.filter(RawClient.isOpen).count < 30, "trickling connections still open")
        #expect(events.service.httpConnectionsCutAtDeadline >= 10)
        await events.stop()
    }

    @Test func aWrongKeyWithAHugeDeclaredBodyIsAnsweredWithoutReadingIt() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil,
                                       keys: EventKeys(["shop-android": Self.key]))
        let fd = try RawClient.connect(port: events.service.httpPort ?? 0)
        defer { _ = close(fd) }
        // 10 GB declared, not one byte of it sent: the answer comes anyway.
        try RawClient.send(fd, "POST /event HTTP/1.1\r\nHost: t\r\nX-Push-Event-Key: not-the-key-at-all\r\n"
                           + "Content-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n")
        let response = try #require(try RawClient.response(fd))
        #expect(response.hasPrefix("HTTP/1.1 401"), "\(response)")
        #expect(response.contains(#""code":"EVENT_KEY""#))
        await events.stop()
    }

    /// RFC 9112 §6.3: a body framed two ways is answered 400 and its connection closed, before a
    /// byte of it is read; nothing reaches the queue and no leftover is read as a second request.
    @Test(arguments: [["Content-Length: 40", "Transfer-Encoding: chunked"], ["Content-Length: 40", "Content-Length: 3"],
                      ["Content-Length: 40, 3"]])
    func aBodyFramedTwoWaysIsRefusedAndItsConnectionClosed(framing: [String]) async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil)
        let fd = try RawClient.connect(port: events.service.httpPort ?? 0)
        defer { _ = close(fd) }
        let body = eventJSON("click", "mnid2m.1.2.3.4.5")
        try RawClient.send(fd, "POST /event HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                           + framing.map { $0 + "\r\n" }.joined() + "\r\n" + body + "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        let response = try #require(try RawClient.response(fd))
        // libmicrohttpd refuses a Content-Length list itself (its own 400 page); the handler
        // refuses the rest (BAD_FRAMING). Either way no request of it is answered 2xx.
        #expect(response.hasPrefix("HTTP/1.1 400") && !response.contains("HTTP/1.1 2"), "\(response)")
        #expect(response.contains(#""code":"BAD_FRAMING""#) || framing == ["Content-Length: 40, 3"], "\(response)")
        #expect(!RawClient.isOpen(fd))
        #expect(try f.messageCount(f.topology.eventsQueue) == 0)
        // The same body framed one way passes.
        let (status, answer) = try await eventsHTTP("POST", events.base + "/event", body: body)
        #expect(status == 202, "\(answer)")
        await events.stop()
    }

    @Test func aKeyFailureGetsTheSameAnswerWhetherTheAppIDExistsOrNot() async throws {
        let f = try await PipelineFixture()
        let keys = EventKeys(["shop-android": Self.key, "shop-ios": "k-ios-0123456789ab"])
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil, keys: keys,
                                       knownApps: ["shop-android", "shop-ios"])
        func post(app: String, key: String) async throws -> (Int, String) {
            let body = #"{"event_type":"click","mn_message_id":"mnid2m.1.2.3.4.5","app_id":"\#(app)","occurred_at":"2026-11-29T21:05:00Z"}"#
            return try await eventsHTTP("POST", events.base + "/event", body: body, headers: ["X-Push-Event-Key: \(key)"])
        }
        let known = try await post(app: "shop-android", key: "wrong-key-0123456789")
        #expect(known.0 == 401)
        #expect(try await post(app: "no-such-app", key: "wrong-key-0123456789") == known)
        // A key that opens another app: still the same answer, known app or not.
        #expect(try await post(app: "shop-android", key: "k-ios-0123456789ab") == known)
        #expect(try await post(app: "no-such-app", key: Self.key) == known)
        // The right key for a known app passes; an unknown app with a right key is then refused
        // as unknown only when the key would open it (it cannot: it has no key), so 401 above.
        #expect(try await post(app: "shop-android", key: Self.key).0 == 202)
        await events.stop()
    }

    @Test func eventAnswers503WhenTheBrokerRefusesThePublish() async throws {
        let f = try await PipelineFixture()
        let policy = f.topology.prefix + "-full"
        let pattern = "^" + NSRegularExpression.escapedPattern(for: f.topology.eventsQueue) + "$"
        try f.broker.rabbitmqctl(["set_policy", "-p", f.settings.vhost, "--apply-to", "queues", policy, pattern,
                                  #"{"max-length":1,"overflow":"reject-publish"}"#])
        defer { _ = try? f.broker.rabbitmqctl(["clear_policy", "-p", f.settings.vhost, policy]) }
        try await eventually("the policy on \(f.topology.eventsQueue)") {
            try f.broker.rabbitmqctl(["list_queues", "-p", f.settings.vhost, "name", "policy"]).split(separator: "\n")
                .contains { $0.hasPrefix(f.topology.eventsQueue + "\t") && $0.hasSuffix(policy) }
        }
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil)
        // A quorum queue refuses only once it is OVER max-length: two fillers get in (1, then 2 > 1).
        for id in ["mnid2m.1.2.3.4.5", "mnid2m.1.2.3.4.6"] {
            let filler = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("click", id))
            #expect(filler.0 == 202, "\(filler.1)")
        }
        let (status, body) = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("open", "mnid2m.1.2.3.4.7"))
        #expect(status == 503, "\(body)")
        #expect(body.contains(#""code":"UNAVAILABLE""#))
        let queued = try f.drain(f.topology.eventsQueue)
        #expect(queued.count == 2)
        #expect(queued.allSatisfy { String(decoding: $0.body, as: UTF8.self).contains("\"click\"") })
        await events.stop()
    }
}

/// A bare TCP client, to do what curl will not: stay idle, send slowly, stop mid-request.
enum RawClient {
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { close(fd); throw FixtureError("connect: errno \(errno)") }
        return fd
    }

    static func send(_ fd: Int32, _ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw FixtureError("send: errno \(errno)") }
    }

    /// The bytes the server sends until it closes or goes quiet for 2 s (within 20 s); nil when
    /// the connection was closed without a byte.
    static func response(_ fd: Int32) throws -> String? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let giveUp = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < giveUp {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, received.isEmpty ? 1000 : 2000)
            if ready == 0 { if received.isEmpty { continue } else { break } }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return received.isEmpty ? nil : String(decoding: received, as: UTF8.self)
    }

    /// False once the peer closed (or reset) the connection.
    static func isOpen(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 0) > 0 else { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }
}
