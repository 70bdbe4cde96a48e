import HTTPServer
import PushCore

/// Which web pages may post events from a browser (CORS), from the App IDs' `allowed_origins`.
/// Pure. A preflight (`OPTIONS`) is answered for an origin some App ID allows, since it carries
/// no body to tell the App ID; the `POST` then needs every event's App ID to allow the origin
/// (an event without `app_id`: any App ID). Requests without an `Origin` header (native apps,
/// servers) are not concerned.
public struct EventOrigins: Sendable, Equatable {
    /// `allowed_origins` by App ID.
    public let byApp: [String: Set<String>]

    public init(byApp: [String: Set<String>]) { self.byApp = byApp.filter { !$0.value.isEmpty } }

    public init(_ registry: AppRegistry) {
        self.init(byApp: registry.apps.mapValues { Set($0.allowedOrigins) })
    }

    /// How long a browser may keep a preflight's answer.
    static let preflightMaxAge = 600
    /// The request headers a page may send: the body's type and the event key.
    static let allowedHeaders = "Content-Type, X-Push-Event-Key"

    /// True when some App ID allows `origin`.
    public func allowsAny(_ origin: String) -> Bool { byApp.values.contains { $0.contains(origin) || $0.contains("*") } }

    /// True when the App ID `appID` allows `origin` (nil: some App ID does).
    public func allows(_ origin: String, appID: String?) -> Bool {
        guard let appID else { return allowsAny(origin) }
        guard let allowed = byApp[appID] else { return false }
        return allowed.contains(origin) || allowed.contains("*")
    }

    /// The answer to a preflight from `origin` for `path`: 204 with the CORS headers, or 403
    /// without them (the browser then refuses the page's request).
    func preflight(origin: String) -> HTTPResponse {
        guard allowsAny(origin) else {
            return EventIngestion.error(403, code: "ORIGIN", field: "$", "the origin \(origin) may not post events (allowed_origins)")
        }
        return Self.withCORS(HTTPResponse(status: 204, contentType: "text/plain", body: []), origin: origin)
            .adding("Access-Control-Allow-Methods", "POST")
            .adding("Access-Control-Allow-Headers", Self.allowedHeaders)
            .adding("Access-Control-Max-Age", String(Self.preflightMaxAge))
    }

    /// `response` readable by a page of `origin`.
    static func withCORS(_ response: HTTPResponse, origin: String) -> HTTPResponse {
        response.adding("Access-Control-Allow-Origin", origin).adding("Vary", "Origin")
    }
}
