/// Watches the client's HTTP exchanges with FCM's send endpoint and its token fetches, for
/// metrics and log lines: called when a request leaves and when its answer (or transport
/// failure) is in, when a token fetch ends and when a fault of the setup pauses a project.
/// Keep every call cheap; they run on the sending thread.
public protocol FCMExchangeObserver: Sendable {
    func exchangeStarted()
    /// `status` is the HTTP status, nil when no response arrived (timeout, reset, refused).
    func exchangeFinished(status: Int?, duration: Duration)
    /// One token request ended: `cause` is `ok` or the failure's `OAuthError.cause`
    /// (`invalid_grant`, `http_404`, `http_500`, `malformed`, `unreachable`, `tls`, `key`).
    func tokenFetchFinished(status: Int?, cause: String)
    /// A fault of the setup paused `project` for `duration` (not called while it stays paused):
    /// `cause` is the failure that did it, without secrets.
    func projectPaused(_ project: String, reason: ProjectRateLimiter.PauseReason, cause: FCMFailure, for duration: Duration)
    /// `project` turned slow (`slow`: its sends over `limit` in flight are deferred) or answers
    /// promptly again (`ProjectConcurrency`).
    func projectSlowChanged(_ project: String, slow: Bool, limit: Int)
}

extension FCMExchangeObserver {
    public func tokenFetchFinished(status: Int?, cause: String) {}
    public func projectPaused(_ project: String, reason: ProjectRateLimiter.PauseReason, cause: FCMFailure, for duration: Duration) {}
    public func projectSlowChanged(_ project: String, slow: Bool, limit: Int) {}
}
