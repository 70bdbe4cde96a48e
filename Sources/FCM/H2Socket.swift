import Glibc

/// Name resolution and non-blocking TCP connects for the HTTP/2 transport.
///
/// `resolve` calls getaddrinfo on the caller's thread, which is an engine's thread (the
/// transport's `fcm-h2`, or a lane's consumer thread): a slow resolver stalls everything that
/// thread polls while it runs. Connections are few and long-lived (one per 100 streams to FCM),
/// so this happens rarely (decision 0085).
enum H2Socket {
    /// One resolved address.
    struct Address {
        var storage = sockaddr_storage()
        var length: socklen_t = 0
        var family: Int32 = 0
    }

    /// Why a resolution or connect failed, in a few words.
    struct Failure: Error {
        let reason: String
    }

    /// The TCP addresses of `host:port`, or a short reason.
    static func resolve(host: String, port: Int) -> Result<[Address], Failure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else { return .failure(Failure(reason: "cannot resolve \(host): " + String(cString: gai_strerror(status)))) }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var node = list
        while let entry = node {
            if let addr = entry.pointee.ai_addr, entry.pointee.ai_addrlen <= socklen_t(MemoryLayout<sockaddr_storage>.size) {
                var address = Address()
                withUnsafeMutableBytes(of: &address.storage) {
                    $0.baseAddress!.copyMemory(from: addr, byteCount: Int(entry.pointee.ai_addrlen))
                }
                address.length = entry.pointee.ai_addrlen
                address.family = entry.pointee.ai_family
                addresses.append(address)
            }
            node = entry.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(Failure(reason: "no address for \(host)")) : .success(addresses)
    }

    /// Starts a non-blocking connect (TCP_NODELAY, SO_KEEPALIVE, close-on-exec): the fd, or why not.
    static func connect(_ address: Address) -> Result<Int32, Failure> {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(address.family, type, 0)
        guard fd >= 0 else { return .failure(Failure(reason: describe(errno))) }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
        var storage = address.storage
        let r = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        if r == 0 || errno == EINPROGRESS { return .success(fd) }
        let error = errno
        close(fd)
        return .failure(Failure(reason: describe(error)))
    }

    /// The outcome of a finished non-blocking connect (SO_ERROR): 0 when connected.
    static func connectError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    static func describe(_ error: Int32) -> String { String(cString: strerror(error)) }
}
