import Foundation
@testable import PushEvents
import Testing

/// The app clients of examples/android (Kotlin, built with Debian's `kotlinc`, run on the JVM)
/// and examples/ios (Swift, built with this toolchain's `swiftc`, Foundation only) against a real
/// events endpoint whose body limit is small: each reads a queue left by an earlier run (60
/// events in a file), sends it again in halves after the endpoint's 413, then reports three
/// events; every event is stored once and the queue ends empty. Fails, never skips, when a
/// compiler is missing.
@Suite(.serialized, .timeLimit(.minutes(4))) struct MobileClientsTests {
    /// A queued event's id, long enough that 60 of them are over the endpoint's 6 000 bytes.
    static func eventID(_ i: Int) -> String { "e-\(i)-" + String(repeating: "x", count: 100) }

    @Test func theAndroidClientSendsItsQueueInHalvesAfterA413AndEveryEventIsStoredOnce() async throws {
        let dir = try temporaryDirectory()
        let driver = """
            import java.io.File
            import java.net.URL
            fun main(args: Array<String>) {
                val events = PushEvents(URL(args[0]), "shop-android", file = File(args[1]))
                val wait = events.flush()
                for (i in 1..3) events.report("open", "mnid2m.3.3.3.3.$i")
                println("pending=${events.pending} wait=$wait")
            }
            """
        try driver.write(toFile: dir + "/Main.kt", atomically: true, encoding: .utf8)
        let (built, log) = try runTool("kotlinc", [repositoryRoot + "/examples/android/PushEvents.kt", dir + "/Main.kt",
                                                   "-include-runtime", "-d", dir + "/client.jar"])
        try #require(built == 0, "kotlinc: \(log.suffix(2_000))")
        let queue = (1...60).map { "open\tmnid2m.5.5.5.5.\($0)\tshop-android\t2026-12-06T10:00:00Z\t\(Self.eventID($0))\n" }.joined()
        try queue.write(toFile: dir + "/queue.tsv", atomically: true, encoding: .utf8)
        try await run(["java", "-jar", dir + "/client.jar"], queueFile: dir + "/queue.tsv", expectStored: 63)
    }

    @Test func theIOSClientSendsItsQueueInHalvesAfterA413AndEveryEventIsStoredOnce() async throws {
        let dir = try temporaryDirectory()
        let driver = """
            import Foundation
            let arguments = CommandLine.arguments
            let events = PushEvents(endpoint: URL(string: arguments[1])!, appID: "shop-android",
                                    file: URL(fileURLWithPath: arguments[2]))
            await events.flush()
            for i in 1...3 { await events.report(.open, messageID: "mnid2m.4.4.4.4.\\(i)") }
            print("pending=\\(await events.pending)")
            """
        try driver.write(toFile: dir + "/main.swift", atomically: true, encoding: .utf8)
        let (built, log) = try runTool("swiftc", ["-swift-version", "6", repositoryRoot + "/examples/ios/PushEvents.swift",
                                                  dir + "/main.swift", "-o", dir + "/client"])
        try #require(built == 0, "swiftc: \(log.suffix(2_000))")
        let queue = (1...60).map {
            #"{"event_type":"open","mn_message_id":"mnid2m.6.6.6.6.\#($0)","app_id":"shop-android","occurred_at":"2026-12-06T10:00:00Z","event_id":"\#(Self.eventID($0))"}"#
        }
        try ("[" + queue.joined(separator: ",") + "]").write(toFile: dir + "/queue.json", atomically: true, encoding: .utf8)
        try await run([dir + "/client"], queueFile: dir + "/queue.json", expectStored: 63)
    }

    /// Runs `command ENDPOINT QUEUE_FILE` against an events endpoint with a 6 000-byte body limit;
    /// expects it to print `pending=0`, and the endpoint to store `expectStored` events and no more.
    private func run(_ command: [String], queueFile: String, expectStored: Int) async throws {
        let f = try await PipelineFixture()
        let events = try RunningEvents(settings: f.settings, topology: f.topology, database: queueFile + ".events.db",
                                       knownApps: ["shop-android"], configureHTTP: { $0.maxBodyBytes = 6_000 })
        defer { Task { await events.stop() } }
        let (code, out) = try runTool(command[0], Array(command.dropFirst()) + [events.base, queueFile])
        #expect(code == 0 && out.contains("pending=0"), "\(out.suffix(2_000))")
        let deadline = ContinuousClock.now + .seconds(20)
        while Int(events.service.metrics.eventsStored.value) < expectStored, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(Int(events.service.metrics.eventsStored.value) == expectStored)
        #expect(events.service.metrics.tooLarge.value > 0, "the endpoint never answered 413: the test did not test the halving")
    }
}
