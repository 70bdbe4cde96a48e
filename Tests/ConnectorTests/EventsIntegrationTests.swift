import AMQP
import BrokerHarness
@testable import EventStorage
import Foundation
@testable import HTTPServer
import PushCore
@testable import PushEvents
@testable import ServiceRuntime
import Testing
@testable import Connector

/// An HTTP exchange through curl (the real client apps would use): status and body.
func eventsHTTP(_ method: String, _ url: String, body: String? = nil, headers: [String] = []) async throws -> (Int, String) {
    let answer = try await httpWithHeaders(method, url, body: body, headers: (body == nil ? ["Content-Type: application/json"] : []) + headers)
    return (answer.status, answer.body)
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(_ what: String, timeout: Duration = .seconds(30), _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw FixtureError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(50))
    }
}

/// An events service running in this process for one test.
final class RunningEvents: Sendable {
    let service: EventsService
    let shutdown = ShutdownSignal()
    let task: Task<Void, Never>
    let base: String
    let database: String?

    init(settings: AMQPSettings, topology: Topology, database: String?, http: Bool = true, keys: EventKeys? = nil,
         knownApps: Set<String>? = nil, configureHTTP: (inout MicroHTTPServer.Configuration) -> Void = { _ in },
         configure: (inout EventsService.Configuration) -> Void = { _ in }) throws {
        var c = EventsService.Configuration(settings: settings, topology: topology)
        if http {
            var h = MicroHTTPServer.Configuration()
            h.port = 0
            configureHTTP(&h)
            c.http = h
        }
        c.database = database.map(EventsDatabase.init)
        c.keys = keys
        c.knownApps = knownApps
        c.batchDelay = .milliseconds(10)
        configure(&c)
        let service = try EventsService(configuration: c, logger: Logger(component: "test-events", minimumLevel: .error))
        self.service = service
        self.database = database
        let host = c.http.map { $0.host.contains(":") ? "[\($0.host)]" : $0.host } ?? "127.0.0.1"
        base = "http://\(host):\(service.httpPort ?? 0)"
        let shutdown = self.shutdown
        task = Task { await service.run(until: shutdown) }
    }

    /// Stops the service and waits until it has stopped.
    func stop() async {
        shutdown.trigger()
        await task.value
    }

    /// A test that failed before `stop()` still shuts the service down (not awaited then).
    deinit { shutdown.trigger() }
}

func eventJSON(_ type: String, _ id: String, at: String = "2026-11-29T21:05:00Z", extra: String = "") -> String {
    #"{"event_type":"\#(type)","mn_message_id":"\#(id)","app_id":"shop-android","occurred_at":"\#(at)"\#(extra)}"#
}

@Suite(.serialized, .timeLimit(.minutes(3))) struct EventsIntegrationTests {
    @Test func aJobSentThroughTheWorkerThenClickAndOpenEventsGiveTheFunnel() async throws {
        let f = try await PipelineFixture()
        let db = f.directory + "/events.db"
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: db, knownApps: Set(f.registry.appIDs))
        let (shutdown, worker) = f.startWorker(try f.makeWorker())
        try await f.publish([jobJSON("funnel", tokens: ["dev-a", "dev-b", "dev-c", "unregistered-x"], extra: #","campaign":"C7""#)])
        let results = try await f.results(4)
        shutdown.trigger()
        await worker.value
        let id = { (token: String) in results.first { $0.target.value == token }!.mnMessageID }

        var (status, body) = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("click", id("dev-a")))
        #expect(status == 202 && body == #"{"accepted":1}"#)
        (status, _) = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("open", id("dev-a")))
        #expect(status == 202)
        for _ in 0..<3 {  // the app retried: counts once
            (status, _) = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("open", id("dev-b"), extra: #","event_id":"ev-b-open""#))
            #expect(status == 202)
        }
        let batch = #"{"events":[\#(["dev-a", "dev-b", "dev-c"].map { eventJSON("receive", id($0)) }.joined(separator: ","))]}"#
        (status, body) = try await eventsHTTP("POST", events.base + "/events", body: batch)
        #expect(status == 202 && body == #"{"accepted":3}"#)

        try await eventually("7 events and 4 sends stored") {
            events.service.metrics.eventsStored.value + events.service.metrics.duplicates.value == 8
                && events.service.metrics.sendsStored.value == 4
        }
        await events.stop()

        let (code, out, err) = await runCLI(["stats", "--db", db, "--job-id", "funnel", "--json"])
        #expect(code == 0, "stderr: \(err)")
        let funnel = try JSONValue.parse(out)
        #expect(funnel["recipients"] == 4)
        #expect(funnel["sent"] == 3)
        #expect(funnel["invalid_tokens"] == 1)
        #expect(funnel["rejected"] == 0)
        #expect(funnel["received"] == 3)
        #expect(funnel["opened"] == 2)
        #expect(funnel["clicked"] == 1)
        #expect(funnel["dismissed"] == 0)
        #expect(funnel["events"] == 6)
        #expect(funnel["rates"]?["opened"] == .double(0.6667))
        let (textCode, text, _) = await runCLI(["stats", "--db", db, "--campaign", "C7"])
        #expect(textCode == 0)
        #expect(text.contains("clicked          1  (33.3 % of sent)"))
    }

    @Test func malformedEventsGet400NamingTheFieldAndNothingIsQueued() async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil)
        let cases: [(String, String, String)] = [
            ("/event", "{not json", "$"),
            ("/event", #"{"event_type":"like","mn_message_id":"mnid2m.1.2.3.4.5"}"#, "event_type"),
            ("/event", #"{"event_type":"open","mn_message_id":"mnid2m.1.2"}"#, "mn_message_id"),
            ("/event", #"{"event_type":"open"}"#, "mn_message_id"),
            ("/event", #"{"event_type":"open","mn_message_id":"mnid2m.1.2.3.4.5","occurred_at":"yesterday"}"#, "occurred_at"),
            // A batch with no good event (one with some keeps them: EventsForRealClientsTests).
            ("/events", #"{"events":[{"event_type":"open","mn_message_id":"bad"},{"event_type":"open"}]}"#, "events[0].mn_message_id"),
            ("/events", #"{"events":[\#(Array(repeating: eventJSON("open", "mnid2m.1.2.3.4.5"), count: 501).joined(separator: ","))]}"#, "events"),
            ("/events", #"{"items":[]}"#, "events"),
        ]
        for (path, body, field) in cases {
            let (status, answer) = try await eventsHTTP("POST", events.base + path, body: body)
            #expect(status == 400, "\(body.prefix(80)) → \(status) \(answer)")
            #expect((try? JSONValue.parse(answer))?["error"]?["field"] == .string(field), "\(answer)")
        }
        let huge = #"{"events":[],"pad":"\#(String(repeating: "x", count: 1_100_000))"}"#
        #expect(try await eventsHTTP("POST", events.base + "/events", body: huge).0 == 413)
        #expect(try await eventsHTTP("GET", events.base + "/event").0 == 405)
        #expect(try await eventsHTTP("GET", events.base + "/nowhere").0 == 404)
        #expect(try f.messageCount(f.topology.eventsQueue) == 0)
        // The same server does queue a valid event: the zero above is not an accident of wiring.
        #expect(try await eventsHTTP("POST", events.base + "/event", body: eventJSON("open", "mnid2m.1.2.3.4.5")).0 == 202)
        #expect(try f.messageCount(f.topology.eventsQueue) == 1)
        let metrics = try await eventsHTTP("GET", events.base + "/metrics").1
        let parsed = try PrometheusExposition(metrics)
        #expect(parsed.value("push_connector_events_rejected_total", ["reason": "invalid"]) == Double(cases.count))
        #expect(parsed.value("push_connector_events_rejected_total", ["reason": "too_large"]) == 1)
        #expect(parsed.value("push_connector_events_accepted_total") == 1)
        #expect(parsed.value("push_connector_events_received_total", ["type": "open"]) == 1)
        await events.stop()
    }

    @Test func withTheBrokerUnreachableEventAnswers503() async throws {
        let f = try await PipelineFixture()
        var settings = f.settings
        let refusing = try RefusingPort()  // nothing listens there
        defer { refusing.close() }
        settings.port = refusing.port
        let events = try RunningEvents(settings: settings, topology: f.topology, database: nil)
        let (status, body) = try await eventsHTTP("POST", events.base + "/event", body: eventJSON("open", "mnid2m.1.2.3.4.5"))
        #expect(status == 503, "\(body)")
        #expect(body.contains("UNAVAILABLE"))
        #expect(try await eventsHTTP("POST", events.base + "/events", body: #"{"events":[\#(eventJSON("click", "mnid2m.1.2.3.4.5"))]}"#).0 == 503)
        let (health, reason) = try await eventsHTTP("GET", events.base + "/healthz")
        #expect(health == 503 && reason.contains("broker"), "\(health) \(reason)")
        #expect(events.service.metrics.accepted.value == 0)
        await events.stop()
    }

    @Test func withEventKeysOnlyTheRightKeyIsAccepted() async throws {
        let f = try await PipelineFixture()
        let keys = EventKeys(["shop-android": "k-0123456789abcdef"])
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: nil, keys: keys)
        let body = eventJSON("open", "mnid2m.1.2.3.4.5")
        #expect(try await eventsHTTP("POST", events.base + "/event", body: body).0 == 401)
        #expect(try await eventsHTTP("POST", events.base + "/event", body: body, headers: ["X-Push-Event-Key: wrong"]).0 == 401)
        let noApp = #"{"event_type":"open","mn_message_id":"mnid2m.1.2.3.4.5"}"#
        #expect(try await eventsHTTP("POST", events.base + "/event", body: noApp, headers: ["X-Push-Event-Key: k-0123456789abcdef"]).0 == 401)
        #expect(try f.messageCount(f.topology.eventsQueue) == 0)
        #expect(try await eventsHTTP("POST", events.base + "/event", body: body, headers: ["x-push-event-key: k-0123456789abcdef"]).0 == 202)
        #expect(try f.messageCount(f.topology.eventsQueue) == 1)
        await events.stop()
    }

    @Test func anUnparseableEventGoesToTheEventsDLQWithAReasonAndConsumingGoesOn() async throws {
        let f = try await PipelineFixture()
        let db = f.directory + "/events.db"
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: db, http: false)
        let publisher = try await ConfirmingPublisher.connect(settings: f.settings)
        for body in ["garbage {", #"{"event_type":"nope","mn_message_id":"mnid2m.1.2.3.4.5"}"#, eventJSON("click", "mnid2m.9.9.9.9.9")] {
            try await publisher.publish(exchange: f.topology.eventsExchange, routingKey: "", body: Data(body.utf8))
        }
        await publisher.close()
        let dead = try await f.take(2, from: f.topology.eventsDeadLetterQueue)
        #expect(String(decoding: dead[0].body, as: UTF8.self) == "garbage {")
        #expect(dead.allSatisfy { $0.properties.headers[DeadLetterHeader.code] == .string("INVALID_EVENT") })
        #expect(dead[1].properties.headers[DeadLetterHeader.message]?.stringValue?.contains("event_type") == true)
        try await eventually("the valid event stored") { events.service.metrics.eventsStored.value == 1 }
        await events.stop()
        #expect(try FunnelQuery.run(path: db, scope: .all).unlinkedEvents == 1)
        #expect(try f.messageCount(f.topology.eventsQueue) == 0)
    }
}
