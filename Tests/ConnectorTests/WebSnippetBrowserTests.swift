@testable import EventStorage
import Foundation
import PushCore
@testable import PushEvents
import Testing
@testable import Connector

/// examples/web/push-events.js in a real browser (headless Chromium, Debian's `chromium`) against
/// a real events endpoint, from another origin (CORS): it reads `mn_message_id` from payloads
/// shaped as the Firebase JS SDK hands them over (`onMessage`'s MessagePayload, and a
/// notification click on a notification the SDK displayed), posts open and click, and the funnel
/// of the job the worker sent shows them. Fails, never skips, when chromium is missing.
@Suite(.serialized, .timeLimit(.minutes(3))) struct WebSnippetBrowserTests {
    @Test func theWebSnippetReportsOpenAndClickFromAnotherOriginAndTheFunnelShowsThem() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        try await f.publish([jobJSON("web-1", tokens: ["web-device-1"])])
        let sent = try await f.results(1)
        shutdown.trigger()
        await task.value
        let id = try #require(sent.first?.mnMessageID)

        let site = try temporaryDirectory()
        try FileManager.default.copyItem(atPath: repositoryRoot + "/examples/web/push-events.js", toPath: site + "/push-events.js")
        let pages = try StaticSite(directory: site)
        defer { pages.stop() }
        let db = site + "/events.db"
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: db, knownApps: ["shop-android"],
                                       configure: { $0.origins = EventOrigins(byApp: ["shop-android": [pages.origin]]) })
        defer { Task { await events.stop() } }
        try page(endpoint: events.base, id: id).write(toFile: site + "/index.html", atomically: true, encoding: .utf8)

        let (code, dom) = try runTool("chromium", ["--headless=new", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=15000",
                                                   "--dump-dom", pages.origin + "/index.html"])
        let shown = dom.components(separatedBy: "\n").first { $0.contains("id=\"out\"") } ?? dom.suffix(500).description
        #expect(code == 0 && shown.contains("ids=\(id),\(id) queue=0"), "\(shown)")
        try await eventually("open and click stored") { events.service.metrics.eventsStored.value == 2 }
        await events.stop()
        let funnel = try FunnelQuery.run(path: db, scope: .job("web-1"))
        #expect(funnel.sent == 1 && funnel.opened == 1 && funnel.clicked == 1, "\(funnel)")
    }

    /// A slow answer racing a failed request (issue 51): the first batch's answer comes late,
    /// after later events were queued and a later request failed. Every event reaches the
    /// endpoint, and each is stored once: the snippet sends one batch at a time and an answer
    /// removes only its own batch (before, the late answer removed an event whose own request
    /// had failed, and it was never sent again).
    @Test func aSlowAnswerRacingAFailedRequestLosesNoEvent() async throws {
        let script = """
            const realFetch = globalThis.fetch.bind(globalThis);
            let calls = 0;
            globalThis.fetch = async (url, init) => {
              const n = ++calls;
              if (n === 1) await new Promise((wake) => setTimeout(wake, 500));  // a slow answer
              if (n === 3) throw new TypeError("network down");               // a failed request
              return realFetch(url, init);
            };
            const first = events.report("receive", "mnid2m.1.2.3.4.1");
            await events.report("open", "mnid2m.1.2.3.4.2");
            const third = events.report("click", "mnid2m.1.2.3.4.3");
            await first;
            await third;
            await new Promise((wake) => setTimeout(wake, 8000));  // the retry after 5 s
            out(`queue=${events.queue.length}`);
            """
        let (shown, stored) = try await browse(script, expectStored: 3)
        #expect(shown.contains("queue=0"), "\(shown)")
        #expect(stored == 3, "\(stored) events stored, 3 reported")
    }

    /// A batch over the endpoint's body limit (413) is sent again in halves, not dropped.
    @Test func aBatchTheEndpointFindsTooLargeIsSentAgainInHalves() async throws {
        let script = """
            const sizes = [];
            const realFetch = globalThis.fetch.bind(globalThis);
            globalThis.fetch = async (url, init) => { const r = await realFetch(url, init); sizes.push(r.status); return r; };
            for (let i = 1; i <= 60; i++) events.queue.push(event(i));
            await events.flush();
            out(`queue=${events.queue.length} statuses=${sizes.join(",")}`);
            """
        let (shown, stored) = try await browse(script, expectStored: 60, maxBodyBytes: 6_000)
        #expect(shown.contains("queue=0") && shown.contains("413"), "\(shown)")
        #expect(stored == 60, "\(stored) events stored, 60 queued")
    }

    /// A queue of 500 events goes in batches a keepalive request may carry (64 KiB at most):
    /// before, one 124 KB keepalive request, which the browser refuses, sent again forever.
    @Test func aQueueOf500EventsGoesInBatchesAKeepaliveRequestMayCarry() async throws {
        let script = """
            let largest = 0;
            const realFetch = globalThis.fetch.bind(globalThis);
            globalThis.fetch = (url, init) => {
              if (init.keepalive) largest = Math.max(largest, new TextEncoder().encode(init.body).length);
              return realFetch(url, init);
            };
            for (let i = 1; i <= 500; i++) events.queue.push(event(i));
            await events.flush();
            out(`queue=${events.queue.length} largest=${largest}`);
            """
        let (shown, stored) = try await browse(script, expectStored: 500)
        #expect(shown.contains("queue=0"), "\(shown)")
        let largest = shown.components(separatedBy: "largest=").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? -1
        #expect(largest > 0 && largest <= 65_536, "the largest keepalive body: \(largest) bytes")
        #expect(stored == 500, "\(stored) events stored, 500 queued")
    }

    /// Runs `script` in a page of another origin with `events` (a PushEvents for the App ID
    /// `shop-android`, on a real endpoint), `event(i)` (a well-formed event) and `out(text)`;
    /// returns what it wrote and the events the endpoint stored once `expectStored` were (or 20 s).
    private func browse(_ script: String, expectStored: Int, maxBodyBytes: Int? = nil) async throws -> (String, Int) {
        let f = try await PipelineFixture()
        let site = try temporaryDirectory()
        try FileManager.default.copyItem(atPath: repositoryRoot + "/examples/web/push-events.js", toPath: site + "/push-events.js")
        let pages = try StaticSite(directory: site)
        defer { pages.stop() }
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: site + "/events.db", knownApps: ["shop-android"],
                                       configureHTTP: { if let maxBodyBytes { $0.maxBodyBytes = maxBodyBytes } },
                                       configure: { $0.origins = EventOrigins(byApp: ["shop-android": [pages.origin]]) })
        defer { Task { await events.stop() } }
        let page = """
            <!doctype html><html><body><div id="out">waiting</div>
            <script type="module">
            import { PushEvents } from "./push-events.js";
            const events = new PushEvents({ endpoint: "\(events.base)", appId: "shop-android", storageKey: "test-\(UUID().uuidString)" });
            const event = (i) => ({ event_type: "open", mn_message_id: `mnid2m.7.7.7.7.${i}`, app_id: "shop-android",
                                   occurred_at: "2026-12-06T10:00:00Z", event_id: `e-${i}-${"x".repeat(110)}` });
            const out = (text) => { document.getElementById("out").textContent = text; };
            try {
            \(script)
            } catch (error) { out(`error ${error}`); }
            </script></body></html>
            """
        try page.write(toFile: site + "/index.html", atomically: true, encoding: .utf8)
        let (code, dom) = try runTool("chromium", ["--headless=new", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
                                                   "--dump-dom", pages.origin + "/index.html"])
        let shown = dom.components(separatedBy: "\n").first { $0.contains("id=\"out\"") } ?? dom.suffix(500).description
        #expect(code == 0, "chromium exit \(code): \(dom.suffix(500))")
        let deadline = ContinuousClock.now + .seconds(20)
        while Int(events.service.metrics.eventsStored.value) < expectStored, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .milliseconds(300))  // and nothing more comes
        return (shown, Int(events.service.metrics.eventsStored.value))
    }

    /// A page that reads the id from two payload shapes and reports them through the snippet.
    private func page(endpoint: String, id: String) -> String {
        """
        <!doctype html><html><body><div id="out">waiting</div>
        <script type="module">
        import { PushEvents, messageIdFrom } from "./push-events.js";
        // onMessage(messaging, payload): the MessagePayload of a notification message.
        const foreground = { from: "1234", messageId: "m-1", notification: { title: "T", body: "B" },
                             data: { mn_message_id: "\(id)", "pushdata.promo": "X" } };
        // notificationclick in the service worker, on a notification the SDK displayed: event.notification.
        const click = { title: "T", data: { FCM_MSG: { data: { mn_message_id: "\(id)" }, notification: { title: "T" } } } };
        const events = new PushEvents({ endpoint: "\(endpoint)", appId: "shop-android", storageKey: "test-\(id)" });
        const ids = [messageIdFrom(foreground), messageIdFrom(click)];
        await events.report("open", ids[0]);
        await events.report("click", ids[1]);
        document.getElementById("out").textContent = `ids=${ids.join(",")} queue=${events.queue.length}`;
        </script></body></html>
        """
    }
}

/// A directory served over HTTP on a free port of 127.0.0.1 (Python's http.server): a web
/// origin of its own for browser tests.
final class StaticSite: Sendable {
    let origin: String
    private let process: Process

    init(directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-u", "-c", """
            import functools, http.server, sys
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """, directory]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw FixtureError("the static site did not say its port")
        }
        origin = "http://127.0.0.1:\(port)"
        self.process = process
    }

    func stop() { process.terminate() }
}
