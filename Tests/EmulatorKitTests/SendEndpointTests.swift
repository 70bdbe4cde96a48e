import Foundation
import Testing
@testable import EmulatorKit

@Suite(.timeLimit(.minutes(1))) struct SendEndpointTests {
    @Test func validMessageIsAcceptedAndRecordedOverHTTP2() throws {
        try withEmulator { emulator throws in
            let message = #"{"token":"device-1","notification":{"title":"Hi","body":"There"},"data":{"pushdata.promo":"X"}}"#
            let response = try send(emulator, project: "shop", message: message)
            #expect(response.status == 200)
            #expect(response.httpVersion == "2")
            let name = try #require(response.json["name"] as? String)
            #expect(name.hasPrefix("projects/shop/messages/"))
            let recorded = emulator.recordedMessages()
            #expect(recorded.count == 1)
            #expect(recorded.first?.token == "device-1")
            #expect(recorded.first?.name == name)
            #expect(recorded.first?.messageJSON == message)
            #expect(emulator.stats().count("sent", project: "shop") == 1)
        }
    }

    @Test func http11ClientsAreServedOnTheSamePortWithKeepAlive() throws {
        try withEmulator { emulator throws in
            let response = try Curl.run("GET", "\(emulator.baseURL)/_emulator/stats", http2: false,
                                        extra: ["\(emulator.baseURL)/_emulator/health"])
            #expect(response.status == 200)
            #expect(response.httpVersion == "1.1")
            let first = try send(emulator, message: #"{"topic":"news","data":{"k":"v"}}"#, http2: false)
            #expect(first.status == 200)
            #expect(emulator.recordedMessages().first?.topic == "news")
        }
    }

    @Test func validateOnlyIsAnsweredButNotRecorded() throws {
        try withEmulator { emulator throws in
            let response = try send(emulator, message: #"{"token":"t1","data":{"a":"b"}}"#, validateOnly: true)
            #expect(response.status == 200)
            #expect(response.json["name"] as? String == "projects/demo/messages/fake_message_id")
            #expect(emulator.recordedMessages().isEmpty)
            #expect(emulator.stats().count("validated") == 1)
        }
    }

    @Test func inspectionEndpointsFilterListAndClear() throws {
        try withEmulator { emulator throws in
            _ = try send(emulator, project: "a", message: #"{"token":"t1"}"#)
            _ = try send(emulator, project: "b", message: #"{"token":"t2"}"#)
            _ = try send(emulator, project: "b", message: #"{"token":"unregistered-x"}"#)
            let all = try Curl.run("GET", emulator.baseURL + "/_emulator/messages")
            #expect((all.json["messages"] as? [[String: Any]])?.count == 2)
            let onlyB = try Curl.run("GET", emulator.baseURL + "/_emulator/messages?project=b&token=t2")
            let items = try #require(onlyB.json["messages"] as? [[String: Any]])
            #expect(items.count == 1)
            #expect(items.first?["token"] as? String == "t2")
            #expect((items.first?["message"] as? [String: Any])?["token"] as? String == "t2")
            let stats = try Curl.run("GET", emulator.baseURL + "/_emulator/stats")
            let projects = try #require(stats.json["projects"] as? [String: [String: Int]])
            #expect(projects["b"] == ["sent": 1, "UNREGISTERED": 1])
            let cleared = try Curl.run("DELETE", emulator.baseURL + "/_emulator/messages")
            #expect(cleared.status == 200)
            #expect(emulator.recordedMessages().isEmpty)
            #expect(emulator.stats().count("sent") == 2)
        }
    }

    @Test func recordsAreABoundedRingKeepingTheNewest() throws {
        try withEmulator({ $0.recordCapacity = 2 }) { emulator throws in
            for i in 1...3 { _ = try send(emulator, message: "{\"token\":\"t\(i)\"}") }
            #expect(emulator.recordedMessages().map(\.token) == ["t2", "t3"])
            #expect(emulator.stats().count("sent") == 3)
        }
    }

    @Test func unknownPathAnswersTheFrontEndsHTML404LikeGoogle() throws {
        try withEmulator { emulator throws in
            let answer = try Curl.run("POST", emulator.baseURL + "/typo/v1/projects/p/messages:send", body: "{}")
            #expect(answer.status == 404)
            #expect(answer.body.hasPrefix("<!DOCTYPE html>"))
            #expect(answer.body.contains("<code>/typo/v1/projects/p/messages:send</code> was not found"))
            #expect(answer.json.isEmpty)
            #expect(try Curl.run("GET", emulator.baseURL + "/nope").status == 404)
            #expect(try Curl.run("GET", emulator.baseURL + "/v1/projects/p/messages:send").status == 405)
        }
    }
}
