/// An error answer in FCM HTTP v1's shape: HTTP status, `error.status`, `error.message` and an
/// optional `details[].errorCode` of type `google.firebase.fcm.v1.FcmError`.
struct FCMError: Error, Equatable, Sendable {
    let httpStatus: Int
    let status: String
    let message: String
    let errorCode: String?
    /// Seconds for a `Retry-After` header (429 and 503).
    var retryAfter: Int?

    /// The JSON body FCM sends with this error.
    var body: String {
        var text = "{\"error\":{\"code\":\(httpStatus),\"message\":\(JSONValue.quoted(message)),\"status\":\"\(status)\""
        if let errorCode {
            text += ",\"details\":[{\"@type\":\"type.googleapis.com/google.firebase.fcm.v1.FcmError\",\"errorCode\":\"\(errorCode)\"}]"
        }
        return text + "}}"
    }

    /// The outcome name counted in the stats (`errorCode`, else `status`).
    var outcome: String { errorCode ?? status }

    static func invalidArgument(_ message: String) -> FCMError {
        FCMError(httpStatus: 400, status: "INVALID_ARGUMENT", message: message, errorCode: "INVALID_ARGUMENT")
    }
    static func invalidJSON(_ message: String) -> FCMError {
        invalidArgument("Invalid JSON payload received. " + message)
    }
    static func unregistered() -> FCMError {
        FCMError(httpStatus: 404, status: "NOT_FOUND", message: "Requested entity was not found.", errorCode: "UNREGISTERED")
    }
    static func invalidToken() -> FCMError {
        invalidArgument("The registration token is not a valid FCM registration token")
    }
    static func senderIDMismatch() -> FCMError {
        FCMError(httpStatus: 403, status: "PERMISSION_DENIED", message: "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")
    }
    static func quotaExceeded(retryAfter: Int) -> FCMError {
        FCMError(httpStatus: 429, status: "RESOURCE_EXHAUSTED",
                 message: "Quota exceeded for quota metric 'Send requests' of service 'fcm.googleapis.com'.",
                 errorCode: "QUOTA_EXCEEDED", retryAfter: retryAfter)
    }
    static func unavailable(retryAfter: Int) -> FCMError {
        FCMError(httpStatus: 503, status: "UNAVAILABLE", message: "The service is currently unavailable.",
                 errorCode: "UNAVAILABLE", retryAfter: retryAfter)
    }
    static func internalError() -> FCMError {
        FCMError(httpStatus: 500, status: "INTERNAL", message: "Internal error encountered.", errorCode: "INTERNAL")
    }
    static func thirdPartyAuth() -> FCMError {
        FCMError(httpStatus: 401, status: "UNAUTHENTICATED", message: "Auth error from APNS or Web Push Service",
                 errorCode: "THIRD_PARTY_AUTH_ERROR")
    }
    /// Google's answer to a missing, unknown or expired bearer token (no FcmError details).
    static func unauthenticated() -> FCMError {
        FCMError(httpStatus: 401, status: "UNAUTHENTICATED",
                 message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
                 errorCode: nil)
    }
    static func notFound(_ message: String) -> FCMError {
        FCMError(httpStatus: 404, status: "NOT_FOUND", message: message, errorCode: nil)
    }
    static func methodNotAllowed() -> FCMError {
        FCMError(httpStatus: 405, status: "METHOD_NOT_ALLOWED", message: "Method not allowed.", errorCode: nil)
    }
}
