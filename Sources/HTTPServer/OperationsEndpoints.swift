import ServiceRuntime
/// `GET /healthz`, `GET /readyz` and `GET /metrics` (HEAD too for the probes), shared by the
/// worker's `--http` listener and the events server.
///
/// A probe answers 200 `ok`, or 503 with its reason as plain text (`not ready: lane 0: not
/// consuming …`). The checks are async so that one may ask the broker; a check that hangs is
/// cut by the server's `asynchronousTimeout` (503).
public struct OperationsEndpoints: HTTPHandler {
    /// nil: fine; otherwise the reason it is not.
    public typealias Check = @Sendable () async -> String?

    let health: Check
    let readiness: Check
    let metrics: @Sendable () -> String

    public init(health: @escaping Check, readiness: @escaping Check, metrics: @escaping @Sendable () -> String) {
        self.health = health
        self.readiness = readiness
        self.metrics = metrics
    }

    public func respond(to request: HTTPRequest) -> HTTPReply {
        answer(request) ?? .now(HTTPResponse(status: 404, contentType: "text/plain", text: "no such endpoint: \(request.path)\n"))
    }

    /// The answer when `request` is for one of these paths, else nil.
    public func answer(_ request: HTTPRequest) -> HTTPReply? {
        switch (request.method, request.path) {
        case ("GET", "/healthz"), ("HEAD", "/healthz"): return Self.probe(health, failing: "unhealthy")
        case ("GET", "/readyz"), ("HEAD", "/readyz"): return Self.probe(readiness, failing: "not ready")
        case ("GET", "/metrics"):
            return .now(HTTPResponse(status: 200, contentType: PrometheusText.contentType, text: metrics()))
        case (_, "/healthz"), (_, "/readyz"), (_, "/metrics"):
            return .now(HTTPResponse(status: 405, contentType: "text/plain", text: "\(request.method) is not allowed on \(request.path)\n"))
        default:
            return nil
        }
    }

    private static func probe(_ check: @escaping Check, failing: String) -> HTTPReply {
        .later {
            if let reason = await check() {
                return HTTPResponse(status: 503, contentType: "text/plain", text: "\(failing): \(reason)\n")
            }
            return HTTPResponse(status: 200, contentType: "text/plain", text: "ok\n")
        }
    }
}
