import FCM
import PushCore
import Testing
@testable import Connector

/// FCM's answer is classified once, where it is read (issue 30): the kind of a failure travels as
/// a value to the planner, which never compares code strings.
@Suite struct TypedOutcomeTests {
    @Test func theKindOfAnFCMFailureIsDecidedWhereTheAnswerIsRead() {
        let quota = FCMResponseDecoder.decode(httpStatus: 429, body: Array(#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"q"}}"#.utf8))
        #expect(quota.failure?.kind == .quotaExceeded)
        #expect(DeliveryOutcome(quota) == .retryable(ResultError(code: "RESOURCE_EXHAUSTED", httpStatus: 429, message: "q"), retryAfter: nil, overQuota: true))
        let unavailable = FCMResponseDecoder.decode(httpStatus: 503, body: Array(#"{"error":{"code":503,"status":"UNAVAILABLE","message":"u"}}"#.utf8))
        if case .retryable(_, _, let overQuota) = DeliveryOutcome(unavailable) { #expect(!overQuota) } else { Issue.record("\(unavailable)") }

        let apns = FCMOutcome.configurationFailed(FCMFailure(code: "APNS_AUTH_ERROR", httpStatus: 401, message: "a"))
        let denied = FCMOutcome.configurationFailed(FCMFailure(code: "PERMISSION_DENIED", httpStatus: 403, message: "d"))
        let foreign = FCMResponseDecoder.decode(httpStatus: 404, body: Array("<html>".utf8))
        #expect(foreign.failure?.kind == .unexpectedResponse)
        let faults = [apns, denied, foreign].map { outcome -> ConfigurationFault? in
            if case .configurationFailed(_, let fault) = DeliveryOutcome(outcome) { return fault }
            return nil
        }
        #expect(faults == [.thirdPartyAuth, .permissionDenied, .other], "APNS_AUTH_ERROR, THIRD_PARTY_AUTH_ERROR's former name, is the same fault")
    }

    @Test func aJobTargetMapsOntoFCMsMemberNamesInOnePlace() {
        let recipients = JobTarget.recipients([Recipient(token: "t0"), Recipient(token: "t1")])
        #expect(recipients.member(1) == ("token", "t1") && JobTarget.topic("news").member(0) == ("topic", "news"))
        #expect(JobTarget.condition("'a' in topics").member(0) == ("condition", "'a' in topics"))
    }
}
