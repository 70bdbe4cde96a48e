import Foundation

/// A port on 127.0.0.1 that accepts TCP connections (the kernel completes the handshake into the
/// listen backlog) but never reads or answers: a peer that is halted, overloaded or behind a
/// black-holed route, for tests of connect and handshake timeouts. Held open until `close()`.
public final class SilentPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestBrokerError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw TestBrokerError("bind/listen on 127.0.0.1:0 failed: errno \(errno)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Releases the port (connections still in the backlog are reset).
    public func close() { Glibc.close(fd) }
}
