import EmulatorKit
import Foundation
import PushCore
import Testing
@testable import Connector

/// The seed examples (examples/jobs, the seed document's two message kinds) published as jobs,
/// sent by the worker, and compared — as FCM received them — with LITERAL messages written by
/// hand from docs/contracts.md ("Composition") and the fixture's App ID (the one of
/// examples/apps.json: default_payload `pushdata.source: crm`, extra options android priority
/// high / ttl 86400s, apns-priority 10, analytics label promo). Nothing here is computed by the
/// composer, so a composition change that is not also made here turns the test red.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CompositionEndToEndTests {
    /// Notification + Data, recipient with its own mn_message_id and data (examples/jobs/notification.json).
    static let notificationForAda = #"""
    {"token": "demo-device-ada",
     "notification": {"title": "Nuova offerta disponibile!", "body": "Accedi all’app e scopri i dettagli.",
                      "image": "https://example.com/img/promo.png"},
     "data": {"pushdata.source": "crm", "pushdata.promo": "OFFERTA_ESTIVA", "pushdata.url": "https://example.com/promo",
              "pushdata.name": "Ada", "mn_message_id": "mnid2m.1234.12.12.1.2"},
     "android": {"priority": "high", "ttl": "86400s"},
     "apns": {"headers": {"apns-priority": "10"}},
     "fcm_options": {"analytics_label": "promo"}}
    """#

    /// The same job's second recipient: no data of its own; its generated id is checked apart.
    static let notificationForBruno = #"""
    {"token": "demo-device-bruno",
     "notification": {"title": "Nuova offerta disponibile!", "body": "Accedi all’app e scopri i dettagli.",
                      "image": "https://example.com/img/promo.png"},
     "data": {"pushdata.source": "crm", "pushdata.promo": "OFFERTA_ESTIVA", "pushdata.url": "https://example.com/promo",
              "mn_message_id": "<generated>"},
     "android": {"priority": "high", "ttl": "86400s"},
     "apns": {"headers": {"apns-priority": "10"}},
     "fcm_options": {"analytics_label": "promo"}}
    """#

    /// Data-only (examples/jobs/data-only.json): no notification; APNs background headers and
    /// content-available win over the App ID's apns-priority 10.
    static let dataOnlyForAda = #"""
    {"token": "demo-device-ada",
     "data": {"pushdata.source": "crm", "pushdata.action": "refresh_profile", "pushdata.user_id": "USR12345",
              "mn_message_id": "mnid2m.5678.10.04.3.1"},
     "android": {"priority": "high", "ttl": "86400s"},
     "apns": {"headers": {"apns-priority": "5", "apns-push-type": "background"}, "payload": {"aps": {"content-available": 1}}},
     "fcm_options": {"analytics_label": "promo"}}
    """#

    @Test func seedExamplesReachFCMExactlyAsTheContractSays() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        let jobs = try ["notification.json", "data-only.json"].map {
            try String(contentsOfFile: "\(repositoryRoot)/examples/jobs/\($0)", encoding: .utf8)
        }
        try await f.publish(jobs)
        let results = try await f.results(4)  // 3 recipients + 1
        shutdown.trigger()
        await task.value

        let recorded = try f.emulator.recordedMessages().map { try JSONValue.parse($0.messageJSON) }
        #expect(recorded.count == 3, "the unregistered device is refused by FCM, not recorded: \(recorded.count)")
        func received(_ mnMessageID: String) -> JSONValue? {
            recorded.first { $0["data"]?["mn_message_id"] == .string(mnMessageID) }
        }
        #expect(received("mnid2m.1234.12.12.1.2") == (try JSONValue.parse(Array(Self.notificationForAda.utf8))))
        #expect(received("mnid2m.5678.10.04.3.1") == (try JSONValue.parse(Array(Self.dataOnlyForAda.utf8))))

        // Bruno's id is generated; what FCM got must be what his result reports, and well-formed.
        let bruno = try #require(results.first { $0.target.value == "demo-device-bruno" })
        #expect(MessageID.isWellFormed(bruno.mnMessageID))
        let expectedBruno = Self.notificationForBruno.replacingOccurrences(of: "<generated>", with: bruno.mnMessageID)
        #expect(received(bruno.mnMessageID) == (try JSONValue.parse(Array(expectedBruno.utf8))))

        #expect(Dictionary(uniqueKeysWithValues: results.map { ("\($0.jobID)/\($0.target.value)", $0.outcome) }) == [
            "demo-notification-1/demo-device-ada": .sent, "demo-notification-1/demo-device-bruno": .sent,
            "demo-notification-1/unregistered-demo-device": .invalidToken, "demo-data-1/demo-device-ada": .sent,
        ])
        #expect(results.first { $0.jobID == "demo-notification-1" }?.campaign == "OFFERTA_ESTIVA")
    }
}
