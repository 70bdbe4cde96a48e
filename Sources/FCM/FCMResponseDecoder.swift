import Foundation
import PushCore

/// Turns an FCM HTTP v1 response into an `FCMOutcome`. Pure: no I/O, the clock is a parameter.
///
/// Classification order (DESIGN.md §6): `details[].errorCode` of the `…FcmError` entry, then
/// `error.status`, then the HTTP status; bodies that are not JSON fall through to the status.
public enum FCMResponseDecoder {
    private static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"

    /// Decodes one response. `retryAfter` is the raw `Retry-After` header value, if any.
    public static func decode(httpStatus: Int, body: [UInt8], retryAfter: String? = nil,
                              now: Date = Date()) -> FCMOutcome {
        let json = try? JSONValue.parse(body)
        if (200..<300).contains(httpStatus) {
            return .sent(name: json?["name"]?.stringValue ?? "")
        }
        let error = json?["error"]
        let message = error?["message"]?.stringValue ?? fallbackMessage(httpStatus: httpStatus, body: body)
        let errorCode = fcmErrorCode(in: error)
        let status = error?["status"]?.stringValue
        let delay = retryAfter.flatMap { RetryAfter.parse($0, now: now) }

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

    /// Classifies by the HTTP status alone.
    static func classify(httpStatus: Int, code: String, message: String, retryAfter: Duration?) -> FCMOutcome {
        let failure = FCMFailure(code: code, httpStatus: httpStatus, message: message)
        switch httpStatus {
        case 404: return .invalidToken(failure)
        case 400, 413: return .rejected(failure)
        case 401: return .authFailed(failure)
        case 403: return .configurationFailed(failure)
        case 408, 429, 500...599: return .retryable(failure, retryAfter: retryAfter)
        default: return .configurationFailed(failure)
        }
    }

    private static func fcmErrorCode(in error: JSONValue?) -> String? {
        guard let details = error?["details"]?.arrayValue else { return nil }
        for entry in details {
            guard let type = entry["@type"]?.stringValue, type == fcmErrorType || type.hasSuffix(".FcmError") else { continue }
            if let code = entry["errorCode"]?.stringValue, !code.isEmpty { return code }
        }
        return nil
    }

    /// A short, printable excerpt of a non-JSON body.
    private static func fallbackMessage(httpStatus: Int, body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
            .filter { !$0.isNewline }
            .trimmingCharacters(in: .whitespaces)
        return text.isEmpty ? "HTTP \(httpStatus)" : text
    }
}
