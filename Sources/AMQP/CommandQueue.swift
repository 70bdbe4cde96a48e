import FoundationEssentials
import Glibc
import OSThread

/// The commands for one connection thread: the loops' one inbox (`LoopInbox`) and wake-up
/// (`LoopWakeup`), with the wait a connection loop does between passes (its socket or a command).
final class CommandQueue<Command: Sendable>: Sendable {
    private let inbox = LoopInbox<Command>()
    private let wakeup: LoopWakeup

    /// Throws `.connectionFailed` when the wake-up descriptor cannot be made (out of file
    /// descriptors): the connection open fails like any other, and the caller retries with backoff.
    init() throws(AMQPError) {
        do { wakeup = try LoopWakeup() } catch { throw .connectionFailed(error.description) }
    }

    /// Enqueues a command; false (command dropped) once the queue is closed.
    @discardableResult
    func submit(_ command: Command) -> Bool { inbox.submit(command, wakeup: wakeup) }

    /// Moves every queued command, in order, into `batch` (emptied first), without allocating.
    func drain(into batch: inout [Command]) { inbox.take(into: &batch) }

    /// Refuses further commands and hands back the ones still queued.
    func close() -> [Command] {
        _ = inbox.close()
        var rest: [Command] = []
        inbox.take(into: &rest)
        return rest
    }

    var isClosed: Bool { inbox.isClosed }

    /// Blocks until the socket is readable, a command arrives, or `timeoutMillis` passes.
    func wait(socketFD: Int32, timeoutMillis: Int32) {
        var fds = [pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, 2, timeoutMillis)
        if fds[1].revents != 0 { wakeup.consume() }
    }

    /// `wait`, on a thread whose `PollLoop` may host other sources: they are polled in the same
    /// call and handle what it reports.
    func wait(socketFD: Int32, timeoutMillis: Int32, on loop: PollLoop) {
        guard loop.hasSources else { return wait(socketFD: socketFD, timeoutMillis: timeoutMillis) }
        var fds = [pollfd(fd: socketFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)]
        loop.turn(&fds, timeoutMillis: timeoutMillis)
        if fds[1].revents != 0 { wakeup.consume() }
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
