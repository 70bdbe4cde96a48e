import FoundationEssentials
import HTTPServer
import PushCore

/// The HTTP face of the events service: `POST /event`, `POST /events`, the CORS preflight
/// (`OPTIONS`) for web pages, and, unless they have a listener of their own (`--admin-http`), the
/// `OperationsEndpoints` (`GET /healthz`, `/readyz`, `/metrics`). Validates every event (a batch
/// keeps its good events and reports each bad one, `EventRequestBody`), checks the optional
/// event key and the page's origin, publishes with confirms and only then answers 202
/// `{"accepted":N}`; 503 with `Retry-After` when the broker cannot confirm (the app retries;
/// duplicates count once downstream).
public struct EventIngestion: HTTPHandler {
    /// At most this many events in one `POST /events`.
    public static let maxBatch = 500
    public static let keyHeader = "x-push-event-key"
    /// The request headers the handler reads besides the key (`MicroHTTPServer.Configuration.capturedHeaders`).
    public static let corsHeaders = ["origin"]
    /// `Retry-After` seconds of a 503: the broker did not confirm, or the server is full.
    static let retryAfterUnavailable = "5", retryAfterBusy = "1"

    let publisher: EventPublisher
    let metrics: EventMetrics
    /// Known App IDs (from `--config`); nil accepts any `app_id`.
    let knownApps: Set<String>?
    let keys: EventKeys?
    let origins: EventOrigins
    /// nil: the probes and metrics are served by another listener.
    let operations: OperationsEndpoints?

    /// `health` answers both probes: nil when healthy, else why not. `servesOperations`: false
    /// when an admin listener serves `/healthz`, `/readyz` and `/metrics` instead.
    public init(publisher: EventPublisher, metrics: EventMetrics, knownApps: Set<String>? = nil, keys: EventKeys? = nil,
                origins: EventOrigins = EventOrigins(byApp: [:]), servesOperations: Bool = true,
                health: @escaping OperationsEndpoints.Check = { nil }) {
        self.publisher = publisher
        self.metrics = metrics
        self.knownApps = knownApps
        self.keys = keys
        self.origins = origins
        operations = servesOperations ? Self.operations(metrics: metrics, health: health) : nil
    }

    /// The probes and metrics of the events service, for whichever listener serves them.
    public static func operations(metrics: EventMetrics, health: @escaping OperationsEndpoints.Check) -> OperationsEndpoints {
        OperationsEndpoints(health: health, readiness: health, metrics: { metrics.prometheusText })
    }

    /// With event keys, a `POST /event(s)` whose header opens no App ID at all is refused with
    /// the same 401 as any other key failure, before its body is read.
    public func admit(_ request: HTTPRequest) -> HTTPResponse? {
        guard let keys, request.method == "POST", request.path == "/event" || request.path == "/events",
              !keys.opensAny(presented: request.headers[Self.keyHeader])
        else { return nil }
        metrics.requests.increment()
        metrics.unauthorized.increment()
        return readable(Self.keyRefusal, by: request.headers["origin"])
    }

    /// The one answer to every key failure: it never says whether the App ID exists.
    static let keyRefusal = error(401, code: "EVENT_KEY", field: "app_id",
                                  "the X-Push-Event-Key header does not open events of this app_id (or app_id is missing)")

    public func respond(to request: HTTPRequest) -> HTTPReply {
        metrics.requests.increment()
        if let answer = operations?.answer(request) { return answer }
        let origin = request.headers["origin"]
        switch (request.method, request.path) {
        case ("POST", "/event"), ("POST", "/events"):
            return ingest(request, batch: request.path == "/events", origin: origin).map { readable($0, by: origin) }
        case ("OPTIONS", "/event"), ("OPTIONS", "/events"):
            guard let origin else { fallthrough }
            return .now(origins.preflight(origin: origin))
        case (_, "/event"), (_, "/events"):
            return .now(Self.error(405, code: "METHOD_NOT_ALLOWED", field: "$", "\(request.method) is not allowed on \(request.path)"))
        default:
            return .now(Self.error(404, code: "NOT_FOUND", field: "$", "no such endpoint: \(request.path)"))
        }
    }

    /// `response` with the CORS headers when a page of an allowed `origin` asked.
    private func readable(_ response: HTTPResponse, by origin: String?) -> HTTPResponse {
        guard let origin, origins.allowsAny(origin) else { return response }
        return EventOrigins.withCORS(response, origin: origin)
    }

    private func ingest(_ request: HTTPRequest, batch: Bool, origin: String?) -> HTTPReply {
        if request.bodyTooLarge {
            metrics.tooLarge.increment()
            return .now(Self.error(413, code: "BODY_TOO_LARGE", field: "$", "the body is larger than the limit (1 MiB by default)"))
        }
        if request.overBudget {
            metrics.busy.increment()
            return .now(Self.error(503, code: "BUSY", field: "$", "too many request bodies in progress; retry later")
                .adding("Retry-After", Self.retryAfterBusy))
        }
        // With keys, the key is checked before the App ID list: a key failure is the same 401
        // whether the App ID exists or not.
        var body: EventRequestBody
        switch EventRequestBody.read(request.body, batch: batch, knownApps: keys == nil ? knownApps : nil) {
        case .failure(let error): return .now(refused(error))
        case .success(let read): body = read
        }
        if let keys {
            let presented = request.headers[Self.keyHeader]
            if body.events.contains(where: { !keys.allows(appID: $0.appID, presented: presented) }) {
                metrics.unauthorized.increment()
                return .now(Self.keyRefusal)
            }
            if case .success(let read) = EventRequestBody.read(request.body, batch: batch, knownApps: knownApps) { body = read }
        }
        if let origin, let event = body.events.first(where: { !origins.allows(origin, appID: $0.appID) }) {
            metrics.unauthorized.increment()
            return .now(Self.error(403, code: "ORIGIN", field: "app_id",
                                   "the origin \(origin) may not post events of \(event.appID ?? "this app") (allowed_origins)"))
        }
        guard !body.events.isEmpty else {
            return .now(refused(ContractError(document: batch ? "events" : "event", issues: body.issues)))
        }
        let bodies = body.events.map { Data($0.encoded().encodedBytes()) }
        let types = body.events.map(\.eventType.rawValue)
        let rejected = Self.rejectedList(body.rejected)
        let publisher = self.publisher, metrics = self.metrics
        return .later {
            do {
                try await publisher.publish(bodies)
                metrics.accepted.increment(by: bodies.count)
                for type in types { metrics.received.labels(type).increment() }
                var answer: [String: JSONValue] = ["accepted": .int(Int64(bodies.count))]
                if !rejected.isEmpty { answer["rejected"] = .array(rejected) }
                return HTTPResponse(status: 202, body: JSONValue.object(answer).encodedBytes())
            } catch {
                metrics.unavailable.increment()
                return Self.error(503, code: "UNAVAILABLE", field: "$", "\(error); retry later").adding("Retry-After", Self.retryAfterUnavailable)
            }
        }
    }

    private func refused(_ error: ContractError) -> HTTPResponse {
        metrics.invalidRequests.increment()
        return Self.error(400, error)
    }

    /// `[{"index": 3, "field": "events[3].mn_message_id", "code": …, "message": …}, …]`: each
    /// refused event of a batch by its first issue.
    static func rejectedList(_ rejected: [(index: Int, issues: [ContractIssue])]) -> [JSONValue] {
        rejected.compactMap { item in
            item.issues.first.map {
                .object(["index": .int(Int64(item.index)), "field": .string($0.field), "code": .string($0.code.rawValue),
                         "message": .string($0.message)])
            }
        }
    }

    static func error(_ status: Int, _ error: ContractError) -> HTTPResponse {
        let first = error.issues.first ?? ContractIssue(.invalidValue, field: "$", "invalid")
        let issues: [JSONValue] = error.issues.prefix(20).map {
            .object(["field": .string($0.field), "code": .string($0.code.rawValue), "message": .string($0.message)])
        }
        return HTTPResponse(status: status, body: JSONValue.object(["error": .object([
            "field": .string(first.field), "code": .string(first.code.rawValue), "message": .string(first.message),
            "issues": .array(issues),
        ])]).encodedBytes())
    }

    static func error(_ status: Int, code: String, field: String, _ message: String) -> HTTPResponse {
        error(status, ContractError(document: "event", issues: [ContractIssue(IssueCode(rawValue: code), field: field, message)]))
    }
}
