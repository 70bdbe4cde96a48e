import Dispatch
import Glibc
import OSThread
import Synchronization

/// The default FCM send transport: HTTP/2 on libnghttp2 directly (h2 over TLS with ALPN for
/// https, h2c with prior knowledge for http), up to `streamsPerConnection` streams per
/// connection and ceil(maxInFlight / streams) connections per origin and engine, a process-wide
/// cap on requests in flight that callers wait on asynchronously. About 0.4x libcurl's CPU per
/// send (see bench/fcm/README.md).
///
/// Threads: an `H2Engine` owns connections and requests on one thread. The transport's own
/// `fcm-h2` thread runs one for requests started off a `PollLoop` (tasks); a thread with a
/// `PollLoop` (a lane's consumer thread) that starts a request gets an engine of its own, polled
/// with its other descriptors, so the request and its answer stay on it (decision 0085).
///
/// Of `CurlTransportConfiguration` it uses maxInFlight, streamsPerConnection, connectTimeout
/// (TCP and TLS handshake, then `.connectFailed`), requestTimeout (from submission, then
/// `.timeout`), caFile, verifyTLS and maxResponseBytes; `loops` is ignored.
/// Host names are resolved with getaddrinfo on the engine's thread when a connection opens.
/// Sockets are written with MSG_NOSIGNAL (TLS goes through memory BIOs), so the transport
/// raises no SIGPIPE whatever the process's signal disposition.
public final class H2Transport: HTTPTransport {
    public let configuration: CurlTransportConfiguration
    private let shared: H2Shared
    /// The engine of the transport's own `fcm-h2` thread: requests started off a `PollLoop`.
    private let engine: H2Engine
    private let stopped = DispatchSemaphore(value: 0)
    private let isShutDown = Atomic<Bool>(false)
    private let permits: PermitPool
    private let requestTimeout: UInt64

    public init(configuration: CurlTransportConfiguration = CurlTransportConfiguration()) {
        self.configuration = configuration
        let shared = H2Shared(configuration: configuration)
        self.shared = shared
        // A placeholder key until `self` exists; the engine's real key is the transport's.
        let engine = H2Engine(shared: shared, owner: ObjectIdentifier(shared))
        self.engine = engine
        permits = PermitPool(capacity: configuration.maxInFlight)
        requestTimeout = H2Clock.nanoseconds(configuration.requestTimeout)
        // Attached under the transport's key: a request started on `fcm-h2` itself (an answer's
        // callback) goes to this engine directly, not to a second one on the same thread.
        let key = ObjectIdentifier(self)
        engine.owner = key
        OSThread.start(name: "fcm-h2") { [stopped] in
            let loop = PollLoop()
            _ = loop.source(for: key) { engine }
            var nothing: [pollfd] = []
            while !engine.isEnded { loop.turn(&nothing, timeoutMillis: 1000) }
            loop.end(within: 0)
            stopped.signal()
        }
    }

    deinit { shutdown() }

    /// Submits `request` at once when a permit is free, with nothing suspended until the answer
    /// calls `completion` (on the thread of the engine that sent it); otherwise waits for a
    /// permit in a task. Started on a `PollLoop`'s thread (a lane's consumer thread), the
    /// request is sent by that thread's engine and answered there: no hand-off.
    public func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        permits.withPermitTaken { [self] in submitHoldingPermit(request, completion) }
    }

    /// Submits `request` with a permit taken; the answer gives it back.
    private func submitHoldingPermit(_ request: HTTPRequest, _ completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        let permits = permits
        submit(H2Exchange(request: request, deadline: H2Clock.now() &+ requestTimeout, completion: { answer in
            permits.release()
            completion(answer)
        }))
    }

    /// Hands `exchange` to the engine of the calling thread's `PollLoop` (made the first time),
    /// or to the transport's own thread.
    private func submit(_ exchange: H2Exchange) {
        if isShutDown.load(ordering: .relaxed) {
            return exchange.finish(.failure(TransportError(kind: .shutdown, message: "transport shut down")))
        }
        guard let host = PollLoop.current else { return engine.submit(exchange) }
        host.source(for: ObjectIdentifier(self)) { laneEngine() }.enqueue(exchange)
    }

    /// A new engine for the calling thread's loop, known to `shutdown` until it ends.
    private func laneEngine() -> H2Engine {
        let made = H2Engine(shared: shared, owner: ObjectIdentifier(self)) { [shared] ended in
            _ = shared.laneEngines.withLock { $0.removeValue(forKey: ObjectIdentifier(ended)) }
        }
        shared.laneEngines.withLock { $0[ObjectIdentifier(made)] = made }
        if isShutDown.load(ordering: .relaxed) { made.close() }
        return made
    }

    /// Connections opened since the transport was made.
    var connectionsOpened: Int { shared.connectionsOpened.load(ordering: .relaxed) }
    /// Requests sent again after a connection refused them unprocessed (tests).
    var requestsRequeued: Int { shared.requestsRequeued.load(ordering: .relaxed) }

    /// Stops the transport's thread, waiting for it, and tells every lane engine to end at its
    /// thread's next pass: pending and in-flight requests fail with
    /// `TransportError.Kind.shutdown` and every socket closes. Idempotent.
    public func shutdown() {
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        // Under the lock: an engine that ends meanwhile waits to forget itself, and lives (its
        // wake-up descriptor open) while it is signalled.
        shared.laneEngines.withLock { engines in
            for engine in engines.values { engine.close() }
        }
        if engine.close() {
            stopped.wait()
            engine.closeWakeup()
        }
    }
}
