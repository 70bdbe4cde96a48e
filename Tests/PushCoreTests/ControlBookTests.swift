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
        #expect(try ControlRecord.decode(r.encoded, now: 5) == r)
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(Array(#"{"id":"x","kind":"cancel","at":1,"until":2}"#.utf8), now: 1) }
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(Array(#"{"id":"x","kind":"stop","at":1,"until":2}"#.utf8), now: 1) }
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(Array("not json".utf8), now: 1) }
    }

    /// Second audit, finding 3: with many cancels the lookup reads what matches the job's keys
    /// only; its answer is the same as a scan's (earliest written, then smallest id), a job id
    /// cancel ignores its campaign, and records already over are not kept.
    @Test func manyCancelsAnswerAsAScanWouldAndRecordsOverAreNotKept() {
        var book = ControlBook()
        for i in 0..<20_000 { book.apply(record("c\(i)", .cancel, campaign: "K\(i)", at: Int64(i), until: 100_000)) }
        book.apply(record("late", .cancel, campaign: "K7", app: "a", at: 50_000, until: 100_000))
        book.apply(record("tie-b", .cancel, campaign: "T", at: 3, until: 100_000))
        book.apply(record("tie-a", .cancel, campaign: "T", app: "a", at: 3, until: 100_000))
        book.apply(record("j", .cancel, campaign: "NOT-THIS", job: "job-1", at: 1, until: 100_000))
        #expect(book.cancel(appID: "a", campaign: "K7", jobID: "x", now: 10)?.id == "c7", "the earliest written")
        #expect(book.cancel(appID: "a", campaign: "T", jobID: "x", now: 10)?.id == "tie-a", "then the smallest id")
        #expect(book.cancel(appID: "a", campaign: "NOT-THIS", jobID: "x", now: 10) == nil, "a job's cancel ignores its campaign")
        #expect(book.cancel(appID: "a", campaign: "K19999", jobID: "job-1", now: 10)?.id == "j")
        #expect(book.cancel(appID: "a", campaign: "NONE", jobID: "x", now: 10) == nil)
        let kept = book.count
        book.apply(record("over", .cancel, campaign: "O", until: 500), now: 600)
        book.apply(record("over-pause", .pause, app: "a", until: 500), now: 600)
        #expect(book.count == kept && book.cancel(appID: "a", campaign: "O", jobID: "x", now: 400) == nil)
        book.prune(now: 100_000)
        #expect(book.count == 0)
    }

    /// Second audit, finding 9: whoever may publish to the log is bounded: a huge body, a record
    /// written in the future, over-long fields and a bad App ID are refused; `until` is cut to 30
    /// days after `at`, the reason to 256 characters, and the summary escapes control characters.
    @Test func recordsAreBoundedInSizeTimeAndWhatTheyPrint() throws {
        let now: Int64 = 1_800_000_000_000
        let huge = record("h", .pause, app: "a", at: now, until: now + 1).encoded + Array(repeating: 0x20, count: 17 << 10)
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(huge, now: now) }
        let future = record("f", .cancel, campaign: "S", at: 253_402_300_799_000, until: 253_402_300_799_000)
        #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(future.encoded, now: now) }
        let skewed = record("s", .cancel, campaign: "S", at: now + 60_000, until: now + 120_000)
        #expect(try ControlRecord.decode(skewed.encoded, now: now) == skewed, "a minute of skew is no future")
        let forever = record("e", .pause, app: "a", at: now, until: .max)
        #expect(try ControlRecord.decode(forever.encoded, now: now).until == now + ControlRecord.longestMillis)
        for bad in [record("x", .cancel, campaign: String(repeating: "c", count: 257), at: now),
                    record("x", .pause, app: "Bad App!", at: now), record(String(repeating: "i", count: 129), .pause, app: "a", at: now)] {
            #expect(throws: ControlRecord.Invalid.self) { try ControlRecord.decode(bad.encoded, now: now) }
        }
        var loud = record("c-\u{1b}]0;owned\u{07}", .cancel, campaign: "S\n", at: now, until: now + 1)
        loud.reason = String(repeating: "r", count: 10_000) + "\u{1b}[2J"
        let decoded = try ControlRecord.decode(loud.encoded, now: now)
        #expect(decoded.reason?.count == ControlRecord.maxReasonCharacters && decoded.reason?.hasSuffix("…") == true)
        loud.reason = "wrong\u{1b}[2J segment"
        let line = try ControlRecord.decode(loud.encoded, now: now).summary
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 } && line.contains("\\u001b") && line.contains("S\\n"), "\(line)")
    }
}
