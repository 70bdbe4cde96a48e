import Foundation
import Testing
@testable import FCM

@Suite(.timeLimit(.minutes(1))) struct FCMResponseDecoderTests {
    private func errorBody(code: Int, status: String?, message: String = "boom", errorCode: String? = nil,
                           extraDetails: [[String: Any]] = []) -> [UInt8] {
        var error: [String: Any] = ["code": code, "message": message]
        if let status { error["status"] = status }
        var details = extraDetails
        if let errorCode {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode])
        }
        if !details.isEmpty { error["details"] = details }
        return Array(try! JSONSerialization.data(withJSONObject: ["error": error]))
    }

    @Test func successCarriesTheMessageName() {
        let body = Array(#"{"name": "projects/p/messages/0:1700"}"#.utf8)
        #expect(FCMResponseDecoder.decode(httpStatus: 200, body: body) == .sent(name: "projects/p/messages/0:1700"))
    }

    @Test func unregisteredIsAnInvalidToken() {
        let outcome = FCMResponseDecoder.decode(httpStatus: 404, body: errorBody(code: 404, status: "NOT_FOUND", message: "Requested entity was not found.", errorCode: "UNREGISTERED"))
        #expect(outcome == .invalidToken(FCMFailure(code: "UNREGISTERED", httpStatus: 404, message: "Requested entity was not found.")))
    }

    @Test func errorCodeWinsOverStatus() {
        let outcome = FCMResponseDecoder.decode(httpStatus: 403, body: errorBody(code: 403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH"))
        #expect(outcome == .rejected(FCMFailure(code: "SENDER_ID_MISMATCH", httpStatus: 403, message: "boom")))
    }

    @Test func errorCodeIsTakenFromTheFcmErrorEntryOnly() {
        let other: [String: Any] = ["@type": "type.googleapis.com/google.rpc.BadRequest", "errorCode": "UNREGISTERED",
                                    "fieldViolations": [["field": "message.token"]]]
        let outcome = FCMResponseDecoder.decode(httpStatus: 400, body: errorBody(code: 400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", extraDetails: [other]))
        #expect(outcome == .rejected(FCMFailure(code: "INVALID_ARGUMENT", httpStatus: 400, message: "boom")))
        let withoutFcm = FCMResponseDecoder.decode(httpStatus: 400, body: errorBody(code: 400, status: "INVALID_ARGUMENT", extraDetails: [other]))
        #expect(withoutFcm == .rejected(FCMFailure(code: "INVALID_ARGUMENT", httpStatus: 400, message: "boom")))
    }

    @Test(arguments: [
        (400, "INVALID_ARGUMENT", "rejected"), (403, "SENDER_ID_MISMATCH", "rejected"),
        (429, "QUOTA_EXCEEDED", "retryable"), (503, "UNAVAILABLE", "retryable"), (500, "INTERNAL", "retryable"),
        (401, "THIRD_PARTY_AUTH_ERROR", "configuration_failed"), (404, "UNREGISTERED", "invalid_token"),
    ])
    func everyFcmErrorCodeIsClassified(status: Int, errorCode: String, label: String) {
        let outcome = FCMResponseDecoder.decode(httpStatus: status, body: errorBody(code: status, status: nil, errorCode: errorCode))
        #expect(outcome.label == label)
        #expect(outcome.failure == FCMFailure(code: errorCode, httpStatus: status, message: "boom"))
    }

    @Test(arguments: [
        (401, "UNAUTHENTICATED", "auth_failed"), (403, "PERMISSION_DENIED", "configuration_failed"),
        (404, "NOT_FOUND", "configuration_failed"), (429, "RESOURCE_EXHAUSTED", "retryable"),
        (503, "UNAVAILABLE", "retryable"), (500, "INTERNAL", "retryable"), (400, "INVALID_ARGUMENT", "rejected"),
    ])
    func statusIsUsedWithoutErrorCode(status: Int, name: String, label: String) {
        let outcome = FCMResponseDecoder.decode(httpStatus: status, body: errorBody(code: status, status: name))
        #expect(outcome.label == label)
        #expect(outcome.failure?.code == name)
        #expect(outcome.failure?.httpStatus == status)
    }

    @Test(arguments: [(429, "retryable"), (500, "retryable"), (502, "retryable"), (503, "retryable"), (408, "retryable")])
    func foreignBodiesWithATransientStatusAreRetried(status: Int, label: String) {
        let outcome = FCMResponseDecoder.decode(httpStatus: status, body: Array("<html>Bad Gateway</html>\n".utf8))
        #expect(outcome.label == label)
        #expect(outcome.failure == FCMFailure(code: "HTTP_\(status)", httpStatus: status, message: "<html>Bad Gateway</html>"))
    }

    @Test(arguments: [400, 401, 403, 404, 405, 410, 413, 302])
    func foreignBodiesWithAnyOtherStatusAreAConfigurationFailureNeverATokenVerdict(status: Int) {
        let html = "<!DOCTYPE html>\n<title>Error 404 (Not Found)</title>\n<p>The requested URL was not found.\u{1B}[31m"
        let outcome = FCMResponseDecoder.decode(httpStatus: status, body: Array(html.utf8))
        #expect(outcome == .configurationFailed(FCMFailure(
            code: "UNEXPECTED_RESPONSE", httpStatus: status,
            message: "HTTP \(status) without an FCM error (body \"<!DOCTYPE html> <title>Error 404 (Not Found)</title> <p>The requested URL was not found..[31m\"); check --fcm-url and any proxy")))
    }

    @Test(arguments: [
        "", "not json", "{}", #"{"error": "not found"}"#, #"{"error": {"message": "Requested entity was not found."}}"#,
        #"{"message": "UNREGISTERED", "details": [{"errorCode": "UNREGISTERED"}]}"#, "[1,2]",
    ])
    func a404WithoutAGoogleErrorIsNeverAnInvalidToken(body: String) {
        let outcome = FCMResponseDecoder.decode(httpStatus: 404, body: Array(body.utf8))
        #expect(outcome.label == "configuration_failed")
        #expect(outcome.failure?.code == "UNEXPECTED_RESPONSE")
        #expect(outcome.failure?.httpStatus == 404)
    }

    @Test func aGoogleNotFoundWithoutUnregisteredIsAConfigurationFailure() {
        let outcome = FCMResponseDecoder.decode(httpStatus: 404, body: Array(#"{"error":{"code":404,"message":"Not found","status":"SOMETHING"}}"#.utf8))
        #expect(outcome == .configurationFailed(FCMFailure(code: "SOMETHING", httpStatus: 404, message: "Not found")))
    }

    @Test func aLongForeignBodyIsQuotedBoundedAndPrintable() {
        let body = [UInt8](repeating: 0x00, count: 10) + [UInt8](repeating: UInt8(ascii: "x"), count: 100_000)
        let message = FCMResponseDecoder.decode(httpStatus: 404, body: body).failure?.message ?? ""
        #expect(message.contains(String(repeating: ".", count: 10) + String(repeating: "x", count: 190) + "…"))
        #expect(message.count < 300)
        #expect(message.unicodeScalars.allSatisfy { $0 == "…" || (0x20...0x7E).contains($0.value) })
    }

    @Test func invalidArgumentSayingTheTokenIsNotValidIsAnInvalidToken() {
        // FCM's answer to a string that is not a registration token at all.
        let message = "The registration token is not a valid FCM registration token"
        let outcome = FCMResponseDecoder.decode(httpStatus: 400, body: errorBody(code: 400, status: "INVALID_ARGUMENT", message: message, errorCode: "INVALID_ARGUMENT"))
        #expect(outcome == .invalidToken(FCMFailure(code: "INVALID_ARGUMENT", httpStatus: 400, message: message)))
        let violation: [String: Any] = ["@type": "type.googleapis.com/google.rpc.BadRequest",
                                        "fieldViolations": [["field": "message.token", "description": message]]]
        let viaField = FCMResponseDecoder.decode(httpStatus: 400, body: errorBody(code: 400, status: "INVALID_ARGUMENT", message: "Request contains an invalid argument.",
                                                                                 errorCode: "INVALID_ARGUMENT", extraDetails: [violation]))
        #expect(viaField.label == "invalid_token")
    }

    @Test func invalidArgumentAboutThePayloadOrWithoutFcmErrorIsRejected() {
        let payload = FCMResponseDecoder.decode(httpStatus: 400, body: errorBody(code: 400, status: "INVALID_ARGUMENT", message: "Invalid value at 'message.android.ttl'", errorCode: "INVALID_ARGUMENT"))
        #expect(payload.label == "rejected")
        // The phrase without FCM's own errorCode is not enough.
        let noFcmError = FCMResponseDecoder.decode(httpStatus: 400, body: errorBody(code: 400, status: "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token"))
        #expect(noFcmError.label == "rejected")
        // A violation on another field is not a token verdict.
        let violation: [String: Any] = ["@type": "type.googleapis.com/google.rpc.BadRequest",
                                        "fieldViolations": [["field": "message.topic", "description": "not a valid FCM registration token"]]]
        let other = FCMResponseDecoder.decode(httpStatus: 400, body: errorBody(code: 400, status: "INVALID_ARGUMENT", message: "bad", errorCode: "INVALID_ARGUMENT", extraDetails: [violation]))
        #expect(other.label == "rejected")
    }

    @Test func unknownErrorCodeFallsBackToStatusThenHTTP() {
        let outcome = FCMResponseDecoder.decode(httpStatus: 503, body: errorBody(code: 503, status: "SOMETHING_NEW", errorCode: "ALSO_NEW"))
        #expect(outcome == .retryable(FCMFailure(code: "ALSO_NEW", httpStatus: 503, message: "boom"), retryAfter: nil))
    }

    @Test func emptyBodyKeepsAUsefulMessage() {
        #expect(FCMResponseDecoder.decode(httpStatus: 503, body: []) ==
            .retryable(FCMFailure(code: "HTTP_503", httpStatus: 503, message: "HTTP 503"), retryAfter: nil))
    }

    @Test func retryAfterSecondsIsCarried() {
        let outcome = FCMResponseDecoder.decode(httpStatus: 429, body: errorBody(code: 429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"), retryAfter: "120")
        #expect(outcome == .retryable(FCMFailure(code: "QUOTA_EXCEEDED", httpStatus: 429, message: "boom"), retryAfter: .seconds(120)))
    }

    @Test func retryAfterDateIsRelativeToNow() {
        let now = Date(timeIntervalSince1970: 784_111_717) // Sun, 06 Nov 1994 08:48:37 GMT
        let outcome = FCMResponseDecoder.decode(httpStatus: 503, body: [], retryAfter: "Sun, 06 Nov 1994 08:49:37 GMT", now: now)
        #expect(outcome == .retryable(FCMFailure(code: "HTTP_503", httpStatus: 503, message: "HTTP 503"), retryAfter: .seconds(60)))
    }

    @Test func transportFailuresAreRetryableExceptTLS() {
        #expect(FCMClient.outcome(for: TransportError(kind: .timeout, message: "t")).label == "retryable")
        #expect(FCMClient.outcome(for: TransportError(kind: .connectionLost, message: "goaway")).failure?.code == "TRANSPORT_CONNECTION_LOST")
        #expect(FCMClient.outcome(for: TransportError(kind: .tls, message: "cert")).label == "configuration_failed")
    }
}

@Suite(.timeLimit(.minutes(1))) struct RetryAfterTests {
    @Test func headerLineIsRecognisedInAnyCase() {
        #expect(CurlTransfer.retryAfterValue(Array("retry-after: 7\r\n".utf8)) == "7")
        #expect(CurlTransfer.retryAfterValue(Array("Retry-After:\t120 \r\n".utf8)) == "120")
        #expect(CurlTransfer.retryAfterValue(Array("retry-afterx: 7\r\n".utf8)) == nil)
        #expect(CurlTransfer.retryAfterValue(Array("content-length: 7\r\n".utf8)) == nil)
    }

    let now = Date(timeIntervalSince1970: 784_111_717) // 08:48:37 GMT

    @Test func delaySeconds() {
        #expect(RetryAfter.parse("0") == .zero)
        #expect(RetryAfter.parse(" 30 ") == .seconds(30))
    }

    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func everyHTTPDateForm(text: String) {
        #expect(RetryAfter.parse(text, now: now) == .seconds(60))
    }

    @Test func pastDateMeansNoWait() {
        #expect(RetryAfter.parse("Sat, 05 Nov 1994 08:49:37 GMT", now: now) == .zero)
    }

    @Test(arguments: ["", "soon", "-5", "1.5", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT"])
    func garbageIsIgnored(text: String) {
        #expect(RetryAfter.parse(text, now: now) == nil)
    }
}

@Suite(.timeLimit(.minutes(1))) struct AccessTokenResponseTests {
    let now = Date(timeIntervalSince1970: 1_000)

    @Test func parsesTokenAndExpiry() throws {
        let token = try AccessToken.parse(httpStatus: 200, body: Array(#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#.utf8), now: now)
        #expect(token.value == "ya29.x")
        #expect(token.expiresAt == Date(timeIntervalSince1970: 4_599))
        #expect(!"\(token)".contains("ya29"))
    }

    @Test func refusedGrantIsACredentialsError() {
        #expect {
            try AccessToken.parse(httpStatus: 400, body: Array(#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.utf8), now: now)
        } throws: { ($0 as? OAuthError)?.disposition == .credentials }
    }

    @Test func serverErrorIsTransient() {
        #expect {
            try AccessToken.parse(httpStatus: 503, body: [], now: now)
        } throws: { ($0 as? OAuthError)?.disposition == .transient }
        #expect {
            try AccessToken.parse(httpStatus: 200, body: Array("not json".utf8), now: now)
        } throws: { ($0 as? OAuthError)?.disposition == .transient }
    }
}

/// Retry-After from the network is bounded: a huge value cannot trap or pause a project for ever.
@Suite(.timeLimit(.minutes(1))) struct RetryAfterBoundsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: ["10000000000000000", "99999999999999999999999", "Sun, 06 Nov 9999 08:49:37 GMT"])
    func hugeRetryAfterIsClampedToExactlyADay(value: String) {
        #expect(RetryAfter.parse(value, now: Self.now) == .seconds(86_400))
    }

    @Test func aDateWithAYearOfMoreThanFourDigitsIsNotADate() {
        // RFC 9110 dates have a 4-digit year: ignored (nil), so the policy's own backoff applies.
        #expect(RetryAfter.parse("Sun, 06 Nov 300000000 08:49:37 GMT", now: Self.now) == nil)
    }
}
