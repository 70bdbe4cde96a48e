/// Runs services side by side until shutdown, the one start/stop/drain of the worker and the
/// events commands:
/// - every service starts at once and watches the same `ShutdownSignal`;
/// - a service that returns before the signal (it gave up) triggers it, so the others drain
///   and the process exits instead of living on half alive; `run` then reports it;
/// - once every service has drained, the `afterDrain` steps run in order: what must outlive the
///   drain, such as the HTTP endpoint that serves `/metrics` and `/readyz` while lanes settle.
public struct ServiceGroup: Sendable {
    /// How the group ended.
    public enum Ending: Sendable, Equatable {
        /// Every service returned after the signal.
        case shutDown
        /// The service of this name returned before the signal and the group was stopped.
        case endedEarly(String)
    }

    private let services: [(name: String, service: any Service)]
    private let afterDrain: [@Sendable () async -> Void]

    /// `services` by the names an early end is reported under.
    public init(_ services: [(name: String, service: any Service)], afterDrain: [@Sendable () async -> Void] = []) {
        self.services = services
        self.afterDrain = afterDrain
    }

    /// Runs every service until `shutdown` and all of them have drained, then the `afterDrain` steps.
    @discardableResult
    public func run(until shutdown: ShutdownSignal) async -> Ending {
        let ending = await withTaskGroup(of: String?.self, returning: Ending.self) { group in
            for (name, service) in services {
                group.addTask {
                    await service.run(until: shutdown)
                    return shutdown.isTriggered ? nil : name
                }
            }
            var ending = Ending.shutDown
            for await early in group {
                if let early, ending == .shutDown {
                    ending = .endedEarly(early)
                    shutdown.trigger()
                }
            }
            return ending
        }
        for step in afterDrain { await step() }
        return ending
    }
}
