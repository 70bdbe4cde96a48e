/// A long-running part of a process (a lane set, the control log follower, the events service):
/// it runs until the shutdown signal fires, then drains what it holds and returns. The one shape
/// `ServiceGroup` runs, after swift-service-lifecycle's `Service`.
public protocol Service: Sendable {
    /// Runs until `shutdown` is triggered and what it holds is drained. Returning before the
    /// signal is an early end: the group then stops the others (see `ServiceGroup`).
    func run(until shutdown: ShutdownSignal) async
}
