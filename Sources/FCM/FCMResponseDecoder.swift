import FoundationEssentials
import PushCore

/// Turns an FCM HTTP v1 response into an `FCMOutcome`. Pure: no I/O, the clock is a parameter.
///
/// Token verdicts come from FCM's error body only, never from a bare HTTP status:
/// - `invalid_token` needs `details[].errorCode` UNREGISTERED of the `…FcmError` entry, or
///   errorCode INVALID_ARGUMENT whose message (or a `message.token` field violation) says the
///   registration token is not a valid FCM registration token.
/// - Otherwise the order is `details[].errorCode`, then `error.status`, then the HTTP status.
/// - A response that is not a Google API error (`{"error": {"code"|"status": …}}`), e.g. a
///   proxy's or a wrong URL's HTML page, is a configuration failure (`UNEXPECTED_RESPONSE`,
///   with the status and the body's first printable bytes) unless its status is transient
///   (408, 429, 5xx).
public enum FCMResponseDecoder {
    private static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    /// The code of a configuration failure answered by something that is not FCM.
    public static let unexpectedResponseCode = "UNEXPECTED_RESPONSE"
    /// FCM's message for a token that is not a registration token at all.
    static let invalidTokenPhrase = "not a valid fcm registration token"
    /// How many bytes of a foreign body are quoted in the failure message.
    static let excerptLimit = 200

    /// Decodes one response. `retryAfter` is the raw `Retry-After` header value, if any.
    public static func decode(httpStatus: Int, body: [UInt8], retryAfter: String? = nil,
                              now: Date = Date()) -> FCMOutcome {
        let json = try? JSONValue.parse(body)
        if (200..<300).contains(httpStatus) {
            return .sent(name: json?["name"]?.stringValue ?? "")
        }
        let delay = retryAfter.flatMap { RetryAfter.parse($0, now: now) }
        guard let error = json?["error"], error.objectValue != nil,
              error["status"]?.stringValue != nil || error["code"]?.intValue != nil else {
            return classifyForeign(httpStatus: httpStatus, body: body, retryAfter: delay)
        }
        let message = error["message"]?.stringValue ?? "HTTP \(httpStatus)"
        let errorCode = fcmErrorCode(in: error)
        let status = error["status"]?.stringValue

        if errorCode == "INVALID_ARGUMENT", saysTokenIsInvalid(error) {
            return .invalidToken(FCMFailure(code: "INVALID_ARGUMENT", httpStatus: httpStatus, message: message))
        }
        if let errorCode, let outcome = classify(code: errorCode, httpStatus: httpStatus, message: message, retryAfter: delay) {
            return outcome
        }
        if let status {
            if status == "NOT_FOUND" {
                // Unregistered tokens always carry errorCode UNREGISTERED; a bare NOT_FOUND
                // means the project (or URL) does not exist.
                return .configurationFailed(FCMFailure(code: status, httpStatus: httpStatus, message: message))
            }
            if let outcome = classify(code: status, httpStatus: httpStatus, message: message, retryAfter: delay) {
                return outcome
            }
        }
        return classify(httpStatus: httpStatus, code: errorCode ?? status ?? "HTTP_\(httpStatus)",
                        message: message, retryAfter: delay)
    }

    /// Classifies by an FCM error code or a google.rpc status name; nil when unknown.
    /// Never yields `.invalidToken` except for UNREGISTERED.
    static func classify(code: String, httpStatus: Int, message: String, retryAfter: Duration?) -> FCMOutcome? {
        let failure = FCMFailure(code: code, httpStatus: httpStatus, message: message)
        switch code {
        case "UNREGISTERED":
            return .invalidToken(failure)
        case "INVALID_ARGUMENT", "SENDER_ID_MISMATCH", "FAILED_PRECONDITION", "OUT_OF_RANGE":
            return .rejected(failure)
        case "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED", "ABORTED":
            return .retryable(failure, retryAfter: retryAfter)
        case "UNAUTHENTICATED":
            return .authFailed(failure)
        case "THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED", "APNS_AUTH_ERROR":
            return .configurationFailed(failure)
        default:
            return nil
        }
    }

    /// Classifies a Google API error with an unknown code by its HTTP status. Never a token verdict.
    static func classify(httpStatus: Int, code: String, message: String, retryAfter: Duration?) -> FCMOutcome {
        let failure = FCMFailure(code: code, httpStatus: httpStatus, message: message)
        switch httpStatus {
        case 400, 413: return .rejected(failure)
        case 401: return .authFailed(failure)
        case 408, 429, 500...599: return .retryable(failure, retryAfter: retryAfter)
        default: return .configurationFailed(failure)
        }
    }

    /// A response that is not FCM's: transient statuses are retried, anything else means the
    /// URL, a proxy or a load balancer is wrong - a configuration failure, never a token verdict.
    static func classifyForeign(httpStatus: Int, body: [UInt8], retryAfter: Duration?) -> FCMOutcome {
        let excerpt = printableExcerpt(body)
        switch httpStatus {
        case 408, 429, 500...599:
            return .retryable(FCMFailure(code: "HTTP_\(httpStatus)", httpStatus: httpStatus,
                                         message: excerpt.isEmpty ? "HTTP \(httpStatus)" : excerpt),
                              retryAfter: retryAfter)
        default:
            let quoted = excerpt.isEmpty ? "an empty body" : "body \"\(excerpt)\""
            return .configurationFailed(FCMFailure(
                code: unexpectedResponseCode, httpStatus: httpStatus,
                message: "HTTP \(httpStatus) without an FCM error (\(quoted)); check --fcm-url and any proxy"))
        }
    }

    private static func fcmErrorCode(in error: JSONValue) -> String? {
        guard let details = error["details"]?.arrayValue else { return nil }
        for entry in details {
            guard let type = entry["@type"]?.stringValue, type == fcmErrorType || type.hasSuffix(".FcmError") else { continue }
            if let code = entry["errorCode"]?.stringValue, !code.isEmpty { return code }
        }
        return nil
    }

    /// FCM answers a token that is not a registration token with INVALID_ARGUMENT and "The
    /// registration token is not a valid FCM registration token" (in `error.message`, or in a
    /// `google.rpc.BadRequest` field violation on `message.token`).
    private static func saysTokenIsInvalid(_ error: JSONValue) -> Bool {
        if let message = error["message"]?.stringValue, message.lowercased().contains(invalidTokenPhrase) { return true }
        for entry in error["details"]?.arrayValue ?? [] {
            for violation in entry["fieldViolations"]?.arrayValue ?? [] {
                guard violation["field"]?.stringValue == "message.token",
                      let description = violation["description"]?.stringValue else { continue }
                if description.lowercased().contains(invalidTokenPhrase) { return true }
            }
        }
        return false
    }

    /// The body's first bytes, bounded: line breaks and tabs become spaces, anything else that
    /// is not printable ASCII becomes `.`.
    static func printableExcerpt(_ body: [UInt8]) -> String {
        let bytes = body.prefix(excerptLimit).map { byte -> UInt8 in
            if (0x20...0x7E).contains(byte) { return byte }
            return byte == 0x0A || byte == 0x0D || byte == 0x09 ? 0x20 : UInt8(ascii: ".")
        }
        var text = String(decoding: bytes, as: UTF8.self)
        text = text.trimmingWhitespace()
        if body.count > excerptLimit { text += "…" }
        return text
    }
}
