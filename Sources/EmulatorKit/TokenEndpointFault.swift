/// A way for the emulated token endpoint to fail (`FCMEmulator.setTokenEndpointFault`): the
/// answers an OAuth token endpoint gives when it is down, misrouted or refusing an account.
public enum TokenEndpointFault: Sendable, Equatable {
    /// A 4xx OAuth refusal, `{"error": code, …}` (e.g. 400 `invalid_grant`: a revoked key).
    case refusal(status: Int, error: String)
    /// A page that is not an OAuth answer at all (a proxy's or a wrong URL's HTML), with a status.
    case html(status: Int)
    /// A 5xx or 429, optionally with `Retry-After` (seconds).
    case unavailable(status: Int, retryAfterSeconds: Int?)
    /// 200 with a body that is not a token response.
    case garbage

    var response: HTTPResponse {
        switch self {
        case .refusal(let status, let error):
            return .json(status, "{\"error\":\(JSONValue.quoted(error)),\"error_description\":\"emulated refusal\"}")
        case .html(let status):
            return HTTPResponse(status: status, headers: [("content-type", "text/html; charset=UTF-8")],
                                body: Array("<!DOCTYPE html><html><title>Error \(status)</title><p>not an OAuth endpoint</p></html>".utf8))
        case .unavailable(let status, let retryAfter):
            return .json(status, "{\"error\":\"temporarily_unavailable\"}",
                         extraHeaders: retryAfter.map { [("retry-after", String($0))] } ?? [])
        case .garbage:
            return HTTPResponse(status: 200, headers: [("content-type", "text/html")], body: Array("<html>hello</html>".utf8))
        }
    }
}
