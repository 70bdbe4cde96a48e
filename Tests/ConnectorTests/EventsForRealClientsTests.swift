import AMQP
@testable import CLIKit
import Foundation
@testable import HTTPServer
import PushCore
@testable import PushEvents
import Testing
@testable import Connector

/// The events endpoint as browsers and offline apps meet it (issue 31), against the real broker:
/// CORS for the App IDs' `allowed_origins`, batches that keep their good events, `Retry-After`
/// on 503, the probes and metrics on an admin listener, an IPv6 listener.
@Suite(.serialized, .timeLimit(.minutes(2))) struct EventsForRealClientsTests {
    static let shop = "https://shop.example"
    static let origins = EventOrigins(byApp: ["shop-android": [shop]])

    @Test func aPageOfAnAllowedOriginPassesThePreflightAndReadsTheAnswerAndOthersAreRefused() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil, configure: { $0.origins = Self.origins })
        defer { Task { await events.stop() } }
        let preflight = ["Origin: \(Self.shop)", "Access-Control-Request-Method: POST",
                         "Access-Control-Request-Headers: content-type, x-push-event-key"]
        var answer = try await httpWithHeaders("OPTIONS", events.base + "/event", headers: preflight)
        #expect(answer.status == 204, "\(answer)")
        #expect(answer.headers["access-control-allow-origin"] == Self.shop && answer.headers["access-control-allow-methods"] == "POST")
        #expect(answer.headers["access-control-allow-headers"]?.lowercased().contains("x-push-event-key") == true)
        #expect(answer.headers["vary"] == "Origin")

        let event = eventJSON("click", "mnid2m.1.2.3.4.5")
        answer = try await httpWithHeaders("POST", events.base + "/event", body: event, headers: ["Origin: \(Self.shop)"])
        #expect(answer.status == 202 && answer.headers["access-control-allow-origin"] == Self.shop, "\(answer)")

        let evil = "https://evil.example"
        answer = try await httpWithHeaders("OPTIONS", events.base + "/events", headers: ["Origin: \(evil)", "Access-Control-Request-Method: POST"])
        #expect(answer.status == 403 && answer.headers["access-control-allow-origin"] == nil, "\(answer)")
        answer = try await httpWithHeaders("POST", events.base + "/event", body: event, headers: ["Origin: \(evil)"])
        #expect(answer.status == 403 && answer.body.contains("\"ORIGIN\"") && answer.headers["access-control-allow-origin"] == nil, "\(answer)")

        answer = try await httpWithHeaders("POST", events.base + "/event", body: event)
        #expect(answer.status == 202 && answer.headers["access-control-allow-origin"] == nil, "an app without Origin is not concerned: \(answer)")
        #expect(events.service.metrics.accepted.value == 2)
    }

    @Test func aBatchKeepsItsGoodEventsAndReportsEachBadOneByIndex() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil)
        defer { Task { await events.stop() } }
        let batch = #"{"events":["# + [eventJSON("open", "mnid2m.1.1.1.1.1"), eventJSON("open", "not-an-id"), eventJSON("click", "mnid2m.1.1.1.1.2"),
                                           #"{"event_type":"swipe","mn_message_id":"mnid2m.1.1.1.1.3"}"#].joined(separator: ",") + "]}"
        var answer = try await httpWithHeaders("POST", events.base + "/events", body: batch)
        #expect(answer.status == 202, "\(answer)")
        let json = try JSONValue.parse(Array(answer.body.utf8))
        #expect(json["accepted"] == 2)
        let rejected = try #require(json["rejected"]?.arrayValue)
        #expect(rejected.map { $0["index"] } == [1, 3] && rejected.map { $0["field"] } == ["events[1].mn_message_id", "events[3].event_type"],
                "\(answer.body)")
        #expect(events.service.metrics.accepted.value == 2, "the good events were published")

        answer = try await httpWithHeaders("POST", events.base + "/events", body: #"{"events":[{"event_type":"open"}]}"#)
        #expect(answer.status == 400 && answer.body.contains("events[0].mn_message_id"), "a batch with no good event: \(answer)")
        answer = try await httpWithHeaders("POST", events.base + "/event", body: eventJSON("open", "not-an-id"))
        #expect(answer.status == 400, "one event: all or nothing, as before")
    }

    @Test func aRefusalByTheBrokerAnswers503WithRetryAfter() async throws {
        let f = try await PipelineFixture()
        var unreachable = f.settings
        unreachable.port = 1  // nothing listens there: refused at once
        let events = try RunningEvents(settings: unreachable, topology: f.topology, database: nil, configureHTTP: { $0.asynchronousTimeout = .seconds(3) })
        defer { Task { await events.stop() } }
        let answer = try await httpWithHeaders("POST", events.base + "/event", body: eventJSON("open", "mnid2m.1.1.1.1.1"))
        #expect(answer.status == 503 && answer.headers["retry-after"] == "5", "\(answer)")
    }

    @Test func probesAndMetricsMoveToTheAdminListener() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil, configure: { c in
            var admin = MicroHTTPServer.Configuration()
            admin.port = 0
            c.adminHTTP = admin
        })
        defer { Task { await events.stop() } }
        let admin = "http://127.0.0.1:\(try #require(events.service.adminPort))"
        for path in ["/metrics", "/healthz", "/readyz"] {
            #expect(try await httpWithHeaders("GET", events.base + path).status == 404, "\(path) is not on the public listener")
        }
        #expect(try await httpWithHeaders("POST", events.base + "/event", body: eventJSON("open", "mnid2m.1.1.1.1.1")).status == 202)
        let metrics = try await httpWithHeaders("GET", admin + "/metrics")
        #expect(metrics.status == 200 && metrics.body.contains("push_connector_events_accepted_total 1"), "\(metrics.body.prefix(300))")
        try await eventually("the admin listener reports healthy") { try awaitStatus(admin + "/healthz") == 200 }
        #expect(try await httpWithHeaders("POST", admin + "/event", body: eventJSON("open", "mnid2m.1.1.1.1.1")).status == 404)
    }

    @Test func anIPv6ListenerServesEvents() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil, configureHTTP: { $0.host = "::1" })
        defer { Task { await events.stop() } }
        #expect(events.base.hasPrefix("http://[::1]:"))
        let answer = try await httpWithHeaders("POST", events.base + "/event", body: eventJSON("open", "mnid2m.1.1.1.1.1"))
        #expect(answer.status == 202, "\(answer)")
        #expect(HostPort("[::]:8080")?.host == "::" && HostPort("[::]:8080")?.port == 8080 && HostPort("::1:8080") == nil)
    }
}

/// A response's status, headers (lower-cased names) and body, through curl.
func httpWithHeaders(_ method: String, _ url: String, body: String? = nil, headers: [String] = []) async throws
    -> (status: Int, headers: [String: String], body: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    var arguments = ["-s", "-S", "-i", "--max-time", "20", "-X", method]
    if body != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
    for h in headers { arguments += ["-H", h] }
    process.arguments = arguments + [url]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    if let body { try input.fileHandleForWriting.write(contentsOf: Data(body.utf8)) }
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    var parts = text.components(separatedBy: "\r\n\r\n")
    while parts.count > 1, parts[0].hasPrefix("HTTP/1.1 100") { parts.removeFirst() }  // Expect: 100-continue
    let head = parts[0].components(separatedBy: "\r\n")
    guard let statusLine = head.first, statusLine.split(separator: " ").count >= 2, let status = Int(statusLine.split(separator: " ")[1]) else {
        throw FixtureError("curl \(method) \(url) gave no status: \(text)")
    }
    var fields: [String: String] = [:]
    for line in head.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return (status, fields, parts.dropFirst().joined(separator: "\r\n\r\n"))
}

/// The status of a GET, synchronously (for `eventually`).
private func awaitStatus(_ url: String) throws -> Int {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", url]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Int(String(decoding: data, as: UTF8.self)) ?? 0
}
