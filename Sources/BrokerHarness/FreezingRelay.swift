import Glibc
import OSThread
import Synchronization

/// A TCP relay on 127.0.0.1 to a port of this host (the test broker) for any number of clients,
/// for tests of a node that goes silent: after `freeze` it neither reads nor writes on any
/// connection, and closes none (no FIN, no RST), as a node whose packets are dropped on the way.
/// What a client writes fills the sockets' buffers, then meets a zero window; nothing reaches it.
/// `close` ends every connection and the listener.
public final class FreezingRelay: Sendable {
    public let port: Int
    private let listener: Int32
    private let frozen = Atomic<Bool>(false)
    private let closing = Atomic<Bool>(false)
    private let accepted = Atomic<Int>(0)

    public init(targetPort: Int) throws {
        (listener, port) = try LoopbackSocket.bound(listening: 64)
        // A small receive window (inherited by every accepted socket): a frozen connection fills
        // after kilobytes, as behind a lossy route, not after the megabytes loopback would take.
        var window: Int32 = 4096
        _ = setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
        OSThread.start(name: "test-freeze") { [self] in acceptClients(targetPort: targetPort) }
    }

    /// Stops moving bytes either way on every connection, now and later, keeping them open.
    public func freeze() { frozen.store(true, ordering: .relaxed) }

    /// Connections accepted so far.
    public var connections: Int { accepted.load(ordering: .relaxed) }

    /// Closes every connection and the listener.
    public func close() { closing.store(true, ordering: .relaxed) }

    private func acceptClients(targetPort: Int) {
        defer { Glibc.close(listener) }
        while !closing.load(ordering: .relaxed) {
            var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 50) == 1 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            accepted.add(1, ordering: .relaxed)
            OSThread.start(name: "test-freeze-c") { [self] in relay(client, to: targetPort) }
        }
    }

    private func relay(_ client: Int32, to targetPort: Int) {
        let (upstream, connected) = LoopbackSocket.connected(to: targetPort)
        defer {
            Glibc.close(client)
            Glibc.close(upstream)
        }
        guard connected else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while !closing.load(ordering: .relaxed) {
            if frozen.load(ordering: .relaxed) {
                usleep(50_000)
                continue
            }
            var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, 20)
            if frozen.load(ordering: .relaxed) { continue }
            if fds[0].revents != 0, !StallingRelay.copy(from: client, to: upstream, &buffer) { return }
            if fds[1].revents != 0, !StallingRelay.copy(from: upstream, to: client, &buffer) { return }
        }
    }
}
