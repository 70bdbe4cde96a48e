import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Runs handlers for POSIX signals on a dispatch queue instead of in signal context.
public enum SignalHandlers {
    /// The dispatch sources, kept alive for the life of the process.
    private static let sources = Mutex<[SignalSource]>([])

    /// Replaces the default action of `signal` with `handler`, called on a global queue.
    public static func on(_ signal: Int32, _ handler: @escaping @Sendable () -> Void) {
        Glibc.signal(signal, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
        source.setEventHandler(handler: handler)
        source.resume()
        sources.withLock { $0.append(SignalSource(source: source)) }
    }
}

/// A dispatch signal source; only created, resumed and kept, so sharing it is safe.
private struct SignalSource: @unchecked Sendable {
    let source: any DispatchSourceSignal
}
