import Foundation

/// A port on 127.0.0.1 where nothing accepts connections, for tests of an unreachable peer.
///
/// A socket bound to port 0 that never listens, held open until `close()`: a connect to it is
/// refused at once, and no other process can take the port while the test runs (unlike a port
/// bound, read and released).
public final class RefusingPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try LoopbackSocket.bound(listening: nil)
    }

    /// Releases the port.
    public func close() { Glibc.close(fd) }
}
