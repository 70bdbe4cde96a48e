import Foundation

/// A port on 127.0.0.1 that accepts TCP connections (the kernel completes the handshake into the
/// listen backlog) but never reads or answers: a peer that is halted, overloaded or behind a
/// black-holed route, for tests of connect and handshake timeouts. Held open until `close()`.
public final class SilentPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try LoopbackSocket.bound(listening: 64)
    }

    /// Releases the port (connections still in the backlog are reset).
    public func close() { Glibc.close(fd) }
}
