import OSThread
import Synchronization

/// The libcurl `HTTPTransport` (sends with `--fcm-transport curl`, access tokens always): libcurl
/// multi over HTTP/2 (h2 for https, h2c with prior knowledge for http), spread over a few curl
/// loops, with a process-wide cap on requests in flight that callers wait on asynchronously.
public final class CurlTransport: HTTPTransport {
    public let configuration: CurlTransportConfiguration
    private let loops: [CurlLoop]
    private let permits: PermitPool
    private let nextLoop = Atomic<Int>(0)

    public init(configuration: CurlTransportConfiguration = CurlTransportConfiguration()) {
        self.configuration = configuration
        loops = (0..<max(1, configuration.loops)).map {
            CurlLoop(configuration: configuration, name: "fcm-curl-\($0)")
        }
        permits = PermitPool(capacity: configuration.maxInFlight)
    }

    deinit { shutdown() }

    /// Sends `request` on the next curl loop once a permit is free (waiting for one in a task);
    /// `completion` runs on that loop's thread.
    public func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        permits.withPermitTaken { [self] in submitHoldingPermit(request, completion) }
    }

    /// Submits `request` with a permit taken; the answer gives it back.
    private func submitHoldingPermit(_ request: HTTPRequest, _ completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        let index = nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue
        let loop = loops[(index & Int.max) % loops.count]
        let permits = permits
        loop.submit(CurlTransfer(request: request, completion: { answer in
            permits.release()
            completion(answer)
        }))
    }

    /// Stops every curl loop; requests in flight fail with `TransportError.Kind.shutdown`. Idempotent.
    public func shutdown() {
        for loop in loops { loop.close() }
    }
}
