import Glibc

/// The listening socket: accepts clients (non-blocking) and adds them to the loop.
final class Listener: LoopHandler {
    let fd: Int32
    private let loop: EventLoop
    private let service: EmulatorService
    private let tls: TLSContext?
    private(set) var isClosed = false

    init(fd: Int32, loop: EventLoop, service: EmulatorService, tls: TLSContext?) {
        self.fd = fd
        self.loop = loop
        self.service = service
        self.tls = tls
    }

    var interest: Int16 { Int16(POLLIN) }

    func handle(events: Int16) {
        for _ in 0..<64 {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            service.store.countConnection()
            setNonBlocking(client)
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let transport: Transport
            if let tls {
                guard let t = TLSTransport(fd: client, context: tls) else { Glibc.close(client); continue }
                transport = t
            } else {
                transport = SocketTransport(fd: client)
            }
            loop.add(ClientConnection(fd: client, transport: transport, loop: loop, service: service))
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Why the emulator could not listen.
    struct BindError: Error, CustomStringConvertible { let description: String }

    /// A non-blocking listening socket on host:port; returns it with the bound port.
    static func bind(host: String, port: Int) throws(BindError) -> (fd: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else {
            throw BindError(description: "cannot resolve listen address \(host)")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BindError(description: "socket() failed: errno \(errno)") }
        setNonBlocking(fd)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard Glibc.bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw BindError(description: "cannot bind \(host):\(port): \(String(cString: strerror(e)))")
        }
        guard listen(fd, 1024) == 0 else { Glibc.close(fd); throw BindError(description: "listen() failed") }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let boundPort: Int = withUnsafeMutablePointer(to: &storage) { ptr in
            _ = ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            if ptr.pointee.ss_family == sa_family_t(AF_INET6) {
                return ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
            return ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        return (fd, boundPort)
    }
}
