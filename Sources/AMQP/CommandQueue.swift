import FoundationEssentials
import Glibc
import OSThread
import Synchronization

/// A thread-safe queue of commands for one connection thread, plus a self-pipe that wakes the
/// thread out of `poll` when the first command lands in an empty queue.
final class CommandQueue<Command: Sendable>: Sendable {
    private struct State {
        var items: [Command] = []
        var closed = false
    }
    private let state = Mutex(State())
    private let wakeFD: Int32
    private let signalFD: Int32

    /// Throws `.connectionFailed` when the self-pipe cannot be made (out of file descriptors):
    /// the connection open fails like any other, and the caller retries with backoff.
    init() throws(AMQPError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            let code = errno
            throw .connectionFailed("cannot create a pipe for the connection thread: \(String(validatingCString: strerror(code)) ?? "errno \(code)")"
                + (code == EMFILE || code == ENFILE ? " (out of file descriptors: raise the nofile limit)" : ""))
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = fds[0]
        signalFD = fds[1]
    }

    deinit {
        Glibc.close(wakeFD)
        Glibc.close(signalFD)
    }

    /// Enqueues a command; false (command dropped) once the queue is closed.
    @discardableResult
    func submit(_ command: Command) -> Bool {
        let wake: Bool? = state.withLock { s in
            if s.closed { return nil }
            s.items.append(command)
            return s.items.count == 1
        }
        guard let wake else { return false }
        if wake { wakeUp() }
        return true
    }

    func wakeUp() {
        var one: UInt8 = 1
        _ = Glibc.write(signalFD, &one, 1)
    }

    /// Moves every queued command, in order, into `batch` (emptied first). The two buffers trade
    /// places: the connection thread keeps `batch` from pass to pass and the queue reuses its
    /// capacity, so a pass allocates nothing.
    func drain(into batch: inout [Command]) {
        batch.removeAll(keepingCapacity: true)
        state.withLock { s in swap(&batch, &s.items) }
    }

    /// Refuses further commands and hands back the ones still queued.
    func close() -> [Command] {
        state.withLock { s in
            s.closed = true
            let items = s.items
            s.items = []
            return items
        }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Blocks until the socket is readable, a command arrives, or `timeoutMillis` passes.
    func wait(socketFD: Int32, timeoutMillis: Int32) {
        var fds = [pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, 2, timeoutMillis)
        if fds[1].revents != 0 {
            var sink = [UInt8](repeating: 0, count: 64)
            while Glibc.read(wakeFD, &sink, 64) > 0 {}
        }
    }
}

/// How long a connection loop may sleep in `poll`: well under half the heartbeat (librabbitmq
/// sends heartbeats only from inside its wait/publish calls), and short for TLS, where OpenSSL
/// may hold decrypted bytes the socket no longer shows.
func loopPollMillis(_ settings: AMQPSettings) -> Int32 {
    var millis = 200
    if settings.heartbeatSeconds > 0 { millis = min(millis, settings.heartbeatSeconds * 1000 / 4) }
    if settings.tls != nil { millis = min(millis, 20) }
    return Int32(max(millis, 1))
}

/// Starts a dedicated OS thread (librabbitmq: one connection per thread, never shared).
func startConnectionThread(name: String, _ body: @escaping @Sendable () -> Void) {
    OSThread.start(name: name, body)
}
