import FoundationEssentials

/// Polls the App ID file (and the credentials it names) every `interval` and calls `onChange`
/// when their content differs from the last look: a ConfigMap or Secret update reaches the
/// worker without a SIGHUP. A change to a bad file is reported by `onChange` once (it keeps the
/// previous configuration); the next change is tried again.
public struct ConfigurationWatcher: Sendable {
    public let path: String
    public let interval: Duration
    public let onChange: @Sendable () -> Void

    public init(path: String, interval: Duration, onChange: @escaping @Sendable () -> Void) {
        self.path = path
        self.interval = interval
        self.onChange = onChange
    }

    /// Starts polling; cancel the task to stop.
    public func start() -> Task<Void, Never> {
        let first = AppConfigurationFile.fingerprint(path)
        return Task.detached { [self] in
            var last = first
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { return }
                let now = AppConfigurationFile.fingerprint(path)
                // An unreadable file (mid-swap, deleted) is not a change: wait for content.
                guard let now, now != last else { continue }
                last = now
                onChange()
            }
        }
    }
}
