import Synchronization

/// The production `HTTPTransport`: libcurl multi over HTTP/2 (h2 for https, h2c with prior
/// knowledge for http), spread over a few lanes, with a process-wide cap on requests in flight
/// that callers wait on asynchronously.
public final class CurlTransport: HTTPTransport {
    public let configuration: CurlTransportConfiguration
    private let lanes: [CurlLane]
    private let permits: AsyncSemaphore
    private let nextLane = Atomic<Int>(0)

    public init(configuration: CurlTransportConfiguration = CurlTransportConfiguration()) {
        self.configuration = configuration
        lanes = (0..<max(1, configuration.lanes)).map {
            CurlLane(configuration: configuration, name: "fcm-lane-\($0)")
        }
        permits = AsyncSemaphore(permits: max(1, configuration.maxInFlight))
    }

    deinit { shutdown() }

    public func send(_ request: HTTPRequest) async -> Result<HTTPResponse, TransportError> {
        await permits.wait()
        defer { permits.signal() }
        let index = nextLane.wrappingAdd(1, ordering: .relaxed).oldValue
        let lane = lanes[(index & Int.max) % lanes.count]
        return await withCheckedContinuation { continuation in
            lane.submit(CurlTransfer(request: request, completion: continuation))
        }
    }

    /// Stops every lane; requests in flight fail with `TransportError.Kind.shutdown`. Idempotent.
    public func shutdown() {
        for lane in lanes { lane.close() }
    }
}
