@testable import PushCore

/// Small builders shared by the core's tests.
enum Fixtures {
    static let app = AppConfiguration(
        appID: "shop-android", projectID: "shop-prod", credentialsFile: "/run/secrets/shop-sa.json",
        defaultPayload: ["pushdata.source": "crm", "pushdata.promo": "DEFAULT"],
        extraOptions: [
            "android": ["priority": "high", "ttl": "86400s"],
            "apns": ["headers": ["apns-priority": "10"]],
            "fcm_options": ["analytics_label": "promo"],
        ])

    static func job(_ json: String) throws -> SendJob { try SendJob.decode(Array(json.utf8)) }

    /// Composes and returns the messages, failing on any invalid target.
    static func messages(_ job: SendJob, app: AppConfiguration = app) throws -> [ComposedMessage] {
        try MessageComposer().compose(job, app: app).map { outcome in
            guard case .message(let m) = outcome else { throw TestFailure("unexpected invalid outcome: \(outcome)") }
            return m
        }
    }

    /// The issue codes a message breaks.
    static func codes(_ message: JSONValue) -> [IssueCode] { MessageValidator().validate(message: message).map(\.code) }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
