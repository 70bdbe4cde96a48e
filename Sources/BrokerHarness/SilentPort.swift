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

    /// How a connection waiting in the backlog ended, once its client let go of it: the bytes it
    /// had sent and whether it closed with a reset (SO_LINGER 0, what it still held dropped) or
    /// an orderly FIN. Nil when no connection is waiting. Reads without waiting for more.
    public func takeConnection() -> (bytes: Int, reset: Bool)? {
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, 0) == 1 else { return nil }
        let client = accept(fd, nil, nil)
        guard client >= 0 else { return nil }
        defer { Glibc.close(client) }
        _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
        var bytes = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(client, &buffer, buffer.count, 0)
            if n > 0 { bytes += n; continue }
            if n == 0 { return (bytes, false) }
            if errno == EINTR { continue }
            return (bytes, errno == ECONNRESET)
        }
    }

    /// Releases the port (connections still in the backlog are reset).
    public func close() { Glibc.close(fd) }
}
