import PushCore
import Synchronization

/// The App IDs the worker serves right now, with the sender holding their credentials.
/// Replaced as a whole on reload (SIGHUP), so a delivery always sees one consistent snapshot and
/// in-flight work is never dropped.
public final class AppCatalog: Sendable {
    /// One consistent view: the App ID registry and the sender loaded for it.
    public struct Snapshot: Sendable {
        public let registry: AppRegistry
        public let sender: any PushSender

        public init(registry: AppRegistry, sender: any PushSender) {
            self.registry = registry
            self.sender = sender
        }
    }

    private let state: Mutex<Snapshot>

    public init(_ snapshot: Snapshot) { state = Mutex(snapshot) }

    public var current: Snapshot { state.withLock { $0 } }

    public func replace(with snapshot: Snapshot) { state.withLock { $0 = snapshot } }
}
