import Glibc

/// The TCP sockets the harness holds on 127.0.0.1 for a test (`RefusingPort`, `SilentPort`,
/// `StallingRelay`): bound to a port the kernel picks, so that no other process can take it
/// while the test runs.
enum LoopbackSocket {
    /// A socket bound to 127.0.0.1 on a port the kernel picks, listening with `backlog` when
    /// given (never listening otherwise: connects to it are refused); its descriptor and port.
    static func bound(listening backlog: Int32?) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestBrokerError("socket() failed: errno \(errno)") }
        var address = address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (backlog.map { listen(fd, $0) == 0 } ?? true) && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw TestBrokerError("\(backlog == nil ? "bind to" : "bind/listen on") 127.0.0.1:0 failed: errno \(errno)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A TCP socket connected to `port` of 127.0.0.1 (to be closed by the caller either way), and
    /// whether the connect succeeded.
    static func connected(to port: Int) -> (fd: Int32, connected: Bool) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var target = address(port: port)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        return (fd, connected)
    }

    /// The address of `port` on 127.0.0.1.
    static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}

/// A port of 127.0.0.1 free at the time of the call, for a child process to listen on (bound,
/// then closed: another process could take it in between, which a test run on its own machine
/// does not see).
public enum UnusedPort {
    public static func pick() throws -> Int {
        let (fd, port) = try LoopbackSocket.bound(listening: nil)
        Glibc.close(fd)
        return port
    }
}
