import FoundationEssentials
import PushCore

/// The HTTP face of the events service: `POST /event`, `POST /events`, and the
/// `OperationsEndpoints` (`GET /healthz`, `/readyz`, `/metrics`). Validates every event (nothing is queued when any is invalid), checks the
/// optional event key, publishes with confirms and only then answers 202 `{"accepted":N}`;
/// 503 when the broker cannot confirm (the app retries; duplicates count once downstream).
public struct EventIngestion: HTTPHandler {
    /// At most this many events in one `POST /events`.
    public static let maxBatch = 500
    public static let keyHeader = "x-push-event-key"

    let publisher: EventPublisher
    let metrics: EventMetrics
    /// Known App IDs (from `--config`); nil accepts any `app_id`.
    let knownApps: Set<String>?
    let keys: EventKeys?
    let operations: OperationsEndpoints

    /// `health` answers both probes: nil when healthy, else why not.
    public init(publisher: EventPublisher, metrics: EventMetrics, knownApps: Set<String>? = nil, keys: EventKeys? = nil,
                health: @escaping OperationsEndpoints.Check = { nil }) {
        self.publisher = publisher
        self.metrics = metrics
        self.knownApps = knownApps
        self.keys = keys
        operations = OperationsEndpoints(health: health, readiness: health, metrics: { metrics.prometheusText })
    }

    /// With event keys, a `POST /event(s)` whose header opens no App ID at all is refused with
    /// the same 401 as any other key failure, before its body is read.
    public func admit(_ request: HTTPRequest) -> HTTPResponse? {
        guard let keys, request.method == "POST", request.path == "/event" || request.path == "/events",
              !keys.opensAny(presented: request.headers[Self.keyHeader])
        else { return nil }
        metrics.requests.increment()
        metrics.unauthorized.increment()
        return Self.keyRefusal
    }

    /// The one answer to every key failure: it never says whether the App ID exists.
    static let keyRefusal = error(401, code: "EVENT_KEY", field: "app_id",
                                  "the X-Push-Event-Key header does not open events of this app_id (or app_id is missing)")

    public func respond(to request: HTTPRequest) -> HTTPReply {
        metrics.requests.increment()
        if let answer = operations.answer(request) { return answer }
        switch (request.method, request.path) {
        case ("POST", "/event"), ("POST", "/events"):
            return ingest(request, batch: request.path == "/events")
        case (_, "/event"), (_, "/events"):
            return .now(Self.error(405, code: "METHOD_NOT_ALLOWED", field: "$", "\(request.method) is not allowed on \(request.path)"))
        default:
            return .now(Self.error(404, code: "NOT_FOUND", field: "$", "no such endpoint: \(request.path)"))
        }
    }

    private func ingest(_ request: HTTPRequest, batch: Bool) -> HTTPReply {
        if request.bodyTooLarge {
            metrics.tooLarge.increment()
            return .now(Self.error(413, code: "BODY_TOO_LARGE", field: "$", "the body is larger than the limit (1 MiB by default)"))
        }
        if request.overBudget {
            metrics.busy.increment()
            return .now(Self.error(503, code: "BUSY", field: "$", "too many request bodies in progress; retry later"))
        }
        // With keys, the key is checked before the App ID list: a key failure is the same 401
        // whether the App ID exists or not.
        let events: [PushEvent]
        switch Self.decode(request.body, batch: batch, knownApps: keys == nil ? knownApps : nil) {
        case .failure(let issues):
            metrics.invalidRequests.increment()
            return .now(Self.error(400, issues))
        case .success(let decoded): events = decoded
        }
        if let keys {
            let presented = request.headers[Self.keyHeader]
            if events.contains(where: { !keys.allows(appID: $0.appID, presented: presented) }) {
                metrics.unauthorized.increment()
                return .now(Self.keyRefusal)
            }
            if case .failure(let issues) = Self.decode(request.body, batch: batch, knownApps: knownApps) {
                metrics.invalidRequests.increment()
                return .now(Self.error(400, issues))
            }
        }
        let bodies = events.map { Data($0.encoded().encodedBytes()) }
        let types = events.map(\.eventType.rawValue)
        let publisher = self.publisher, metrics = self.metrics
        return .later {
            do {
                try await publisher.publish(bodies)
                metrics.accepted.increment(by: bodies.count)
                for type in types { metrics.received.labels(type).increment() }
                return HTTPResponse(status: 202, text: #"{"accepted":\#(bodies.count)}"#)
            } catch {
                metrics.unavailable.increment()
                return Self.error(503, code: "UNAVAILABLE", field: "$", "\(error); retry later")
            }
        }
    }

    /// Parses and validates a body: one event, or `{"events": [...]}` (1 … `maxBatch`).
    static func decode(_ body: [UInt8], batch: Bool, knownApps: Set<String>?) -> Result<[PushEvent], ContractError> {
        let json: JSONValue
        do {
            json = try JSONValue.parse(body, maxDepth: 8)
        } catch {
            return .failure(ContractError(document: "event", issues: [ContractIssue(.notJSON, field: "$", error.description)]))
        }
        var items: [(JSONValue, String)] = [(json, "")]
        if batch {
            guard let array = json["events"]?.arrayValue else {
                return .failure(ContractError(document: "events", issues: [ContractIssue(.missingField, field: "events", "must be an array of events")]))
            }
            guard (1...maxBatch).contains(array.count) else {
                return .failure(ContractError(document: "events", issues: [ContractIssue(.invalidValue, field: "events",
                                                                                          "must hold 1 to \(maxBatch) events, got \(array.count)")]))
            }
            items = array.enumerated().map { ($1, "events[\($0)]") }
        }
        var events: [PushEvent] = []
        var issues: [ContractIssue] = []
        for (value, path) in items {
            do {
                let event = try PushEvent.decode(value, path: path)
                if let knownApps, let app = event.appID, !knownApps.contains(app) {
                    issues.append(ContractIssue(IssueCode(rawValue: "UNKNOWN_APP"), field: path.isEmpty ? "app_id" : "\(path).app_id",
                                                "no App ID \"\(app)\" in the configuration"))
                }
                events.append(event)
            } catch {
                issues += error.issues
            }
        }
        return issues.isEmpty ? .success(events) : .failure(ContractError(document: batch ? "events" : "event", issues: issues))
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
