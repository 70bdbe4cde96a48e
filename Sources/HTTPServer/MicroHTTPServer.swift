import CMicroHTTPD
import FoundationEssentials
import Glibc
import Synchronization

/// An embedded HTTP/1.1 server on libmicrohttpd (Debian's 0.9.75): epoll, internal thread pool,
/// connections suspended (MHD_suspend_connection) while a handler awaits asynchronous work such
/// as a broker confirm, and resumed when the response is ready — a server thread never waits.
///
/// Bodies above `maxBodyBytes` are read and discarded; the handler sees `bodyTooLarge`.
public final class MicroHTTPServer: Sendable {
    /// Tunables of the server.
    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        public var port: Int = 8080
        /// Server threads (each runs its own epoll loop).
        public var threads: Int = 2
        /// Open connections at most; by default derived from the process's file descriptor
        /// budget (`MicroHTTPServer.defaultConnectionLimit`), so that accepting never starves the
        /// broker connections and the database of descriptors.
        public var connectionLimit: Int = MicroHTTPServer.defaultConnectionLimit()
        /// Open connections from one client address at most (0: no limit).
        public var perIPConnectionLimit: Int = 64
        public var idleTimeoutSeconds: Int = 30
        /// The whole request (headers and body) must arrive within this time from the moment
        /// the connection opened or its previous request was answered; else the connection is cut.
        public var requestDeadline: Duration = .seconds(30)
        public var maxBodyBytes: Int = 1 << 20
        /// Request body bytes held at once across all requests; a body that would go over is
        /// discarded and answered 503 (`HTTPRequest.overBudget`).
        public var maxBufferedBytes: Int = 64 << 20
        /// A suspended request whose work has not answered by then gets 503 (a broker that never
        /// confirms must not hold clients, or shutdown, for ever).
        public var asynchronousTimeout: Duration = .seconds(10)
        /// Header names (any case) copied into `HTTPRequest.headers` (lower-cased).
        public var capturedHeaders: [String] = []

        public init() {}
    }

    /// The port the server listens on (the real one when 0 was asked).
    public let port: Int
    private nonisolated(unsafe) let daemon: OpaquePointer
    /// The callbacks' context: passed retained to libmicrohttpd (released once the daemon
    /// stopped), and held here too, so that the accessors below stay valid after `stop`.
    private let context: Unmanaged<ServerContext>
    private let server: ServerContext
    private let stopped = Atomic<Bool>(false)

    /// Binds and starts serving; throws when the address cannot be bound.
    /// An IPv6 `host` (`::1`) listens on IPv6; `::` on every interface, IPv4 included (dual stack).
    public init(configuration: Configuration, handler: any HTTPHandler) throws(HTTPServerError) {
        var flags = UInt32(MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue)
        var storage = sockaddr_storage()
        if configuration.host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(configuration.port).bigEndian)
            guard inet_pton(AF_INET6, configuration.host, &address.sin6_addr) == 1 else { throw .badAddress(configuration.host) }
            withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            flags |= configuration.host == "::" ? UInt32(MHD_USE_DUAL_STACK.rawValue) : UInt32(MHD_USE_IPv6.rawValue)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(configuration.port).bigEndian)
            guard inet_pton(AF_INET, configuration.host, &address.sin_addr) == 1 else { throw .badAddress(configuration.host) }
            withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
        }
        let context = Unmanaged.passRetained(ServerContext(handler: handler, configuration: configuration))
        let started = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                pc_mhd_start_daemon(flags, UInt16(configuration.port), sockaddrPointer, UInt32(max(1, configuration.threads)),
                                    UInt32(max(1, configuration.connectionLimit)), UInt32(max(0, configuration.perIPConnectionLimit)),
                                    UInt32(configuration.idleTimeoutSeconds), accessHandler, context.toOpaque(),
                                    requestCompleted, context.toOpaque(), connectionNotified, context.toOpaque())
            }
        }
        guard let started else {
            context.takeUnretainedValue().deadlines.stop()
            context.release()
            throw .cannotStart("\(configuration.host):\(configuration.port)")
        }
        daemon = started
        self.context = context
        server = context.takeUnretainedValue()
        port = Int(pc_mhd_bound_port(started))
    }

    /// Answers every new request 503 and waits for suspended requests to be answered (each is answered within
    /// `asynchronousTimeout`, 503 at worst), then stops the daemon. libmicrohttpd aborts if
    /// stopped with suspended connections, so if some are still suspended after `deadline` the
    /// daemon is left to the process's exit rather than stopped. Idempotent.
    public func stop(deadline: Duration = .seconds(15)) async {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        server.stopping.store(true, ordering: .sequentiallyConsistent)
        // No MHD_quiesce_daemon: on an epoll daemon with its own threads it races them to take
        // the listen socket out of the epoll set, and the loser aborts the process (decision
        // 0067). The listener stays open while the suspended requests finish; what arrives
        // meanwhile is answered 503 at once, and MHD_stop_daemon closes it.
        let until = ContinuousClock.now + deadline
        while server.suspended.load(ordering: .sequentiallyConsistent) > 0 && ContinuousClock.now < until {
            try? await Task.sleep(for: .milliseconds(10))
        }
        guard server.suspended.load(ordering: .sequentiallyConsistent) == 0 else { return }
        MHD_stop_daemon(daemon)
        server.deadlines.stop()
        context.release()
    }

    /// True once `stop` began: requests are answered 503 at once from then on, never suspended.
    public var isStopping: Bool { server.stopping.load(ordering: .relaxed) }

    /// Requests suspended right now, awaiting their handler's asynchronous work.
    public var suspendedRequests: Int { server.suspended.load(ordering: .relaxed) }

    /// Connections cut so far for missing the request deadline.
    public var connectionsCutAtDeadline: Int { server.deadlines.cut.load(ordering: .relaxed) }

    /// The default connection limit: the soft `RLIMIT_NOFILE` minus a reserve of 128
    /// descriptors (broker connections, their wake-up pipes, the database, logs), at most 4 096
    /// and at least 16.
    public static func defaultConnectionLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 512 }
        let soft = limit.rlim_cur >= UInt(Int.max) ? 1 << 20 : Int(limit.rlim_cur)
        return max(16, min(4096, soft - 128))
    }
}

/// A failure to start the HTTP server.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable { case badAddress, cannotStart }
    private let code: Code
    public let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    static func badAddress(_ host: String) -> HTTPServerError { HTTPServerError(.badAddress, "not an IPv4 or IPv6 address: \(host)") }
    static func cannotStart(_ address: String) -> HTTPServerError {
        HTTPServerError(.cannotStart, "cannot listen on \(address) (address in use or not permitted)")
    }
}
