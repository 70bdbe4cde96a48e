import Testing
@testable import PushCore

/// `mn_message_id` values are a public contract: app events link back to sends by them, across
/// releases. These literals were computed once (by an independent script of the documented
/// algorithm) and must never change.
@Suite struct MessageIDTests {
    @Test(arguments: [
        ("job-2026-11-30-0001", 0, "mnid2m.3249212290.437018834.1234097009.1187212603.1"),
        ("job-2026-11-30-0001", 1, "mnid2m.3249212290.437018834.1234097009.1187212603.2"),
        ("job-2026-11-30-0001", 999, "mnid2m.3249212290.437018834.1234097009.1187212603.1000"),
        ("a", 0, "mnid2m.2942557260.2248273036.3855201847.583200377.1"),
        ("flaky", 0, "mnid2m.393913257.2245286206.548959954.2133084387.1"),
        ("ordini-estate/è-ü", 4, "mnid2m.370939337.4226498583.160560887.3858353258.5"),
        ("", 0, "mnid2m.3421674724.2216829733.1818371886.129696066.1"),
    ])
    func generatedIDsNeverChange(jobID: String, index: Int, expected: String) {
        #expect(MessageID.generate(jobID: jobID, index: index) == expected)
        #expect(MessageID.isWellFormed(expected))
    }
}
