/// Watches the client's HTTP exchanges with FCM's send endpoint (not the token endpoint), for
/// metrics: called when a request leaves and when its answer (or transport failure) is in.
/// Keep both calls cheap; they run on the sending task.
public protocol FCMExchangeObserver: Sendable {
    func exchangeStarted()
    /// `status` is the HTTP status, nil when no response arrived (timeout, reset, refused).
    func exchangeFinished(status: Int?, duration: Duration)
}
