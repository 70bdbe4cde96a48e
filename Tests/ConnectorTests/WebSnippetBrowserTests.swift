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
