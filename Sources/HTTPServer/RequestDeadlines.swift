import CMicroHTTPD
import FoundationEssentials
import Glibc
import OSThread
import Synchronization

/// The whole-request deadline of the HTTP server: libmicrohttpd only has an inactivity timeout,
/// so a client sending one byte every 25 s would keep a request (and its memory) for ever.
///
/// Every open connection is registered (MHD's connection notifications) with the instant its
/// current request began: when the connection opened, then again when the previous request on it
/// was answered. Once the request has fully arrived (the handler runs) the clock stops. A sweeper
/// thread shuts down (`shutdown(2)`) the socket of any connection whose request is older than
/// the deadline; libmicrohttpd then sees the socket fail and closes the connection itself.
/// The registry entry is removed in MHD's "closed" notification, which MHD sends before it closes
/// the descriptor — under the same lock, so a reused descriptor is never shut by mistake.
///
/// Under pressure — `pressureAt` connections open or more (three quarters of the connection
/// limit) — a request still arriving after `pressureDeadline` (2 s) is cut too: clients that
/// open connections and trickle their headers, each under the per-address limit, from many
/// addresses, would otherwise hold every slot for the whole deadline while real clients are
/// refused (second audit, finding 11). A real request arrives whole within milliseconds.
final class RequestDeadlines: Sendable {
    private struct Entry {
        var fd: Int32
        var since: ContinuousClock.Instant?
    }

    let deadline: Duration
    let pressureAt: Int
    let pressureDeadline: Duration
    private let entries = Mutex<[UInt: Entry]>([:])
    private let running = Atomic<Bool>(true)
    /// Connections cut for missing the deadline.
    let cut = Atomic<Int>(0)

    init(deadline: Duration, connectionLimit: Int = .max, pressureDeadline: Duration = .seconds(2)) {
        self.deadline = deadline
        pressureAt = connectionLimit == .max ? .max : max(1, connectionLimit * 3 / 4)
        self.pressureDeadline = min(deadline, pressureDeadline)
        OSThread.start(name: "http-deadlines") { [self] in sweep() }
    }

    func stop() { running.store(false, ordering: .releasing) }

    func opened(_ connection: OpaquePointer) {
        let fd = pc_mhd_connection_fd(connection)
        guard fd >= 0 else { return }
        entries.withLock { $0[UInt(bitPattern: connection)] = Entry(fd: fd, since: .now) }
    }

    func closed(_ connection: OpaquePointer) {
        _ = entries.withLock { $0.removeValue(forKey: UInt(bitPattern: connection)) }
    }

    /// The request has fully arrived: the handler owns it now (it has its own timeout).
    func arrived(_ connection: OpaquePointer) {
        entries.withLock { $0[UInt(bitPattern: connection)]?.since = nil }
    }

    /// The request was answered: the next one on this connection starts its clock now.
    func answered(_ connection: OpaquePointer) {
        entries.withLock { $0[UInt(bitPattern: connection)]?.since = .now }
    }

    private func sweep() {
        let step = min(Duration.milliseconds(250), pressureDeadline / 4)
        let nanos = UInt32(clamping: step.components.attoseconds / 1_000_000_000 + step.components.seconds * 1_000_000_000)
        while running.load(ordering: .acquiring) {
            let now = ContinuousClock.now
            entries.withLock { all in
                let limit = all.count >= pressureAt ? pressureDeadline : deadline
                for (key, entry) in all {
                    guard let since = entry.since, now - since > limit else { continue }
                    Glibc.shutdown(entry.fd, Int32(SHUT_RDWR))
                    all[key]?.since = nil
                    cut.add(1, ordering: .relaxed)
                }
            }
            usleep(max(1000, nanos / 1000))
        }
    }
}
