import OSThread
/// The default FCM send transport: HTTP/2 on libnghttp2 directly (h2 over TLS with ALPN for
/// https, h2c with prior knowledge for http), one event-loop thread owning every connection,
/// up to `streamsPerConnection` streams per connection and ceil(maxInFlight / streams)
/// connections per origin, a process-wide cap on requests in flight that callers wait on
/// asynchronously. About 0.4x libcurl's CPU per send (see bench/fcm/README.md).
///
/// Of `CurlTransportConfiguration` it uses maxInFlight, streamsPerConnection, connectTimeout
/// (TCP and TLS handshake, then `.connectFailed`), requestTimeout (from submission, then
/// `.timeout`), caFile, verifyTLS and maxResponseBytes; `loops` is ignored (one thread).
/// Host names are resolved with getaddrinfo on the loop thread when a connection opens.
/// Sockets are written with MSG_NOSIGNAL (TLS goes through memory BIOs), so the transport
/// raises no SIGPIPE whatever the process's signal disposition.
public final class H2Transport: HTTPTransport {
    public let configuration: CurlTransportConfiguration
    private let loop: H2Loop
    private let permits: PermitPool
    private let requestTimeout: UInt64

    public init(configuration: CurlTransportConfiguration = CurlTransportConfiguration()) {
        self.configuration = configuration
        loop = H2Loop(configuration: configuration, name: "fcm-h2")
        permits = PermitPool(capacity: configuration.maxInFlight)
        requestTimeout = H2Clock.nanoseconds(configuration.requestTimeout)
    }

    deinit { shutdown() }

    public func send(_ request: HTTPRequest) async -> Result<HTTPResponse, TransportError> {
        await permits.acquire()
        defer { permits.release() }
        let deadline = H2Clock.now() &+ requestTimeout
        return await withCheckedContinuation { continuation in
            loop.submit(H2Exchange(request: request, deadline: deadline, completion: { continuation.resume(returning: $0) }))
        }
    }

    /// Submits `request` at once when a permit is free, with nothing suspended until the answer
    /// calls `completion` (on the loop's thread); otherwise waits for a permit in a task.
    public func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        guard permits.tryAcquire() else {
            Task { completion(await send(request)) }
            return
        }
        let permits = permits
        loop.submit(H2Exchange(request: request, deadline: H2Clock.now() &+ requestTimeout, completion: { answer in
            permits.release()
            completion(answer)
        }))
    }

    /// Connections opened since the transport was made.
    var connectionsOpened: Int { loop.connectionsOpened.load(ordering: .relaxed) }
    /// Requests sent again after a connection refused them unprocessed (tests).
    var requestsRequeued: Int { loop.requestsRequeued.load(ordering: .relaxed) }

    /// Stops the loop thread; pending and in-flight requests fail with
    /// `TransportError.Kind.shutdown` and every socket closes. Idempotent.
    public func shutdown() { loop.close() }
}
