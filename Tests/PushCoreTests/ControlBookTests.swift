import Testing
@testable import PushCore

/// The fleet's control log read in order: cancels match their campaign (of one App ID or all)
/// or job, pauses their App ID, until their end, a lift or a resume.
@Suite struct ControlBookTests {
    func record(_ id: String, _ kind: ControlRecord.Kind, campaign: String? = nil, app: String? = nil, job: String? = nil,
                target: String? = nil, at: Int64 = 0, until: Int64 = 1_000) -> ControlRecord {
        ControlRecord(id: id, kind: kind, campaign: campaign, appID: app, jobID: job, target: target, at: at, until: until)
    }

    @Test func aCancelMatchesItsCampaignOfItsAppIDOrEveryAppIDUntilItEnds() {
        var book = ControlBook()
        book.apply(record("c1", .cancel, campaign: "SUMMER"))
        book.apply(record("c2", .cancel, campaign: "WINTER", app: "shop-ios"))
        #expect(book.cancel(appID: "shop-android", campaign: "SUMMER", jobID: "j", now: 10)?.id == "c1")
        #expect(book.cancel(appID: "shop-ios", campaign: "WINTER", jobID: "j", now: 10)?.id == "c2")
        #expect(book.cancel(appID: "shop-android", campaign: "WINTER", jobID: "j", now: 10) == nil)
        #expect(book.cancel(appID: "shop-android", campaign: nil, jobID: "j", now: 10) == nil)
        #expect(book.cancel(appID: "shop-android", campaign: "SUMMER", jobID: "j", now: 1_000) == nil, "ended")
    }

    @Test func aJobCancelMatchesThatJobOnly() {
        var book = ControlBook()
        book.apply(record("c1", .cancel, job: "j1"))
        #expect(book.cancel(appID: "a", campaign: "X", jobID: "j1", now: 1)?.id == "c1")
        #expect(book.cancel(appID: "a", campaign: "X", jobID: "j2", now: 1) == nil)
    }

    @Test func liftEndsACancelOrPauseAndResumeEndsEveryPauseOfItsAppID() {
        var book = ControlBook()
        book.apply(record("c1", .cancel, campaign: "S"))
        book.apply(record("p1", .pause, app: "a", until: 500))
        book.apply(record("p2", .pause, app: "a", until: 900))
        book.apply(record("p3", .pause, app: "b"))
        #expect(book.pause(appID: "a", now: 1)?.id == "p2", "the longest")
        book.apply(record("l1", .lift, target: "c1"))
        #expect(book.cancel(appID: "a", campaign: "S", jobID: "j", now: 1) == nil)
        book.apply(record("r1", .resume, app: "a"))
        #expect(book.pause(appID: "a", now: 1) == nil)
        #expect(book.pause(appID: "b", now: 1)?.id == "p3")
        #expect(book.active(now: 1).map(\.id) == ["p3"])
    }

    @Test func recordsRoundTripAndBadOnesAreRefusedByName() throws {
        let r = record("c1", .cancel, campaign: "S", app: "a", at: 5, until: 9)
        #expect(try ControlRecord.decode(r.encoded) == r)
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(Array(#"{"id":"x","kind":"cancel","at":1,"until":2}"#.utf8)) }
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(Array(#"{"id":"x","kind":"stop","at":1,"until":2}"#.utf8)) }
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(Array("not json".utf8)) }
    }
}
