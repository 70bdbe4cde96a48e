import Glibc
import OSThread
import Synchronization

/// A TCP relay on 127.0.0.1 between one client and a port of this host (the test broker), for
/// tests of what a client does when its peer stops reading (`stall`: the relay no longer reads
/// what the client writes, so the client's socket fills) or resets the connection (`reset`:
/// the client's socket is closed with an RST) at a moment the test chooses, as a broker under
/// an alarm or a dropped route would; `resume` reads again.
public final class StallingRelay: Sendable {
    public let port: Int
    private let listener: Int32
    private let stalled = Atomic<Bool>(false)
    private let resetting = Atomic<Bool>(false)

    public init(targetPort: Int) throws {
        (listener, port) = try LoopbackSocket.bound(listening: 4)
        OSThread.start(name: "test-relay") { [self] in relay(to: targetPort) }
    }

    /// Stops reading what the client writes (what the target sends still reaches the client).
    public func stall() { stalled.store(true, ordering: .relaxed) }

    /// Reads what the client writes again, after `stall`.
    public func resume() { stalled.store(false, ordering: .relaxed) }

    /// Resets the client's connection (RST) and closes the target's.
    public func reset() { resetting.store(true, ordering: .relaxed) }

    /// Accepts one client (waiting at most 30 s), connects to the target and copies bytes both
    /// ways until either side closes or `reset`.
    private func relay(to targetPort: Int) {
        defer { Glibc.close(listener) }
        var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, 30_000) == 1 else { return }
        let client = accept(listener, nil, nil)
        let (upstream, connected) = LoopbackSocket.connected(to: targetPort)
        defer {
            Glibc.close(client)
            Glibc.close(upstream)
        }
        guard client >= 0, connected else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while !resetting.load(ordering: .relaxed) {
            var fds = [pollfd(fd: stalled.load(ordering: .relaxed) ? -1 : client, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, 20)
            if fds[0].revents != 0, !Self.copy(from: client, to: upstream, &buffer) { return }
            if fds[1].revents != 0, !Self.copy(from: upstream, to: client, &buffer) { return }
        }
        var hard = linger(l_onoff: 1, l_linger: 0)  // close with an RST, not a FIN
        _ = setsockopt(client, SOL_SOCKET, SO_LINGER, &hard, socklen_t(MemoryLayout<linger>.size))
    }

    /// Copies one read's worth; false when the reading side closed or either side failed.
    static func copy(from source: Int32, to sink: Int32, _ buffer: inout [UInt8]) -> Bool {
        let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
        guard count > 0 else { return false }
        return buffer.withUnsafeBytes { raw in
            var sent = 0
            while sent < count {
                let n = send(sink, raw.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                guard n > 0 else { return false }
                sent += n
            }
            return true
        }
    }
}
