import Glibc
import Synchronization

/// Something the event loop polls: a listening socket or a client connection.
protocol LoopHandler: AnyObject {
    var fd: Int32 { get }
    /// poll(2) events wanted now (POLLIN, POLLOUT).
    var interest: Int16 { get }
    /// Called with the revents of `fd`; the handler closes itself when done.
    func handle(events: Int16)
    var isClosed: Bool { get }
    /// Closes the handler's socket (loop shutdown).
    func close()
}

/// One thread, non-blocking sockets, poll(2), and a deadline heap for delayed work
/// (emulated latency never blocks the loop). Everything but `stop()` runs on the loop's thread.
final class EventLoop: @unchecked Sendable {
    private var handlers: [LoopHandler] = []
    private var pending: [LoopHandler] = []
    private var timers = DeadlineHeap()
    /// Work to run once after this pass's due timers, at most once per key.
    private var afterTimers: [ObjectIdentifier: () -> Void] = [:]
    /// A self-pipe: `stop()` writes to [1], the loop polls [0].
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let stopping = Atomic<Bool>(false)
    /// Reusable read buffer shared by all connections of this loop.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)

    init() {
        var pair: [Int32] = [-1, -1]
        _ = pipe(&pair)
        for fd in pair { setNonBlocking(fd) }
        wakeFD = pair[0]
        wakeWriteFD = pair[1]
    }

    deinit {
        Glibc.close(wakeFD)
        Glibc.close(wakeWriteFD)
        readBuffer.deallocate()
    }

    func add(_ handler: LoopHandler) { pending.append(handler) }

    /// Runs `action` on the loop thread after `delay`.
    func schedule(after delay: Duration, _ action: @escaping () -> Void) {
        timers.push(deadline: MonotonicClock.nowNanos() &+ UInt64(max(0, delay.nanoseconds)), action)
    }

    /// Runs `action` once after the timers due in this pass ran, however many of them ask with
    /// the same `key`: a connection writes the answers of every timer that fired for it at once
    /// (one write, one TLS record run) instead of one write per delayed answer.
    func onceAfterTimers(_ key: AnyObject, _ action: @escaping () -> Void) {
        let id = ObjectIdentifier(key)
        if afterTimers[id] == nil { afterTimers[id] = action }
    }

    /// Asks the loop to finish (any thread).
    func stop() {
        stopping.store(true, ordering: .releasing)
        var one: UInt8 = 1
        _ = Glibc.write(wakeWriteFD, &one, 1)
    }

    /// Runs until `stop()`; closes every handler before returning.
    ///
    /// SIGPIPE is blocked on the loop's thread: TLS writes go through OpenSSL's socket BIO, which
    /// cannot pass MSG_NOSIGNAL, so a close_notify or an answer written to a client that went away
    /// would otherwise kill a process that did not ignore SIGPIPE (the tests run the emulator
    /// in-process). Blocked, the write fails with EPIPE and the connection closes.
    func run() {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var fds: [pollfd] = []
        while !stopping.load(ordering: .acquiring) {
            if !pending.isEmpty { handlers.append(contentsOf: pending); pending.removeAll() }
            handlers.removeAll(where: { $0.isClosed })
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            for h in handlers { fds.append(pollfd(fd: h.fd, events: h.interest, revents: 0)) }
            var timeout: Int32 = 1000
            if let next = timers.nextDeadline {
                let now = MonotonicClock.nowNanos()
                timeout = next <= now ? 0 : Int32(min(1000, (next - now + 999_999) / 1_000_000))
            }
            let n = poll(&fds, nfds_t(fds.count), timeout)
            if n > 0 {
                if fds[0].revents != 0 {
                    var drain = [UInt8](repeating: 0, count: 64)
                    _ = Glibc.read(wakeFD, &drain, 64)
                }
                let count = handlers.count
                for i in 0..<count where fds[i + 1].revents != 0 {
                    let h = handlers[i]
                    if !h.isClosed { h.handle(events: fds[i + 1].revents) }
                }
            }
            runDueTimers()
        }
        for h in handlers + pending where !h.isClosed { h.close() }
        handlers.removeAll()
        pending.removeAll()
        timers = DeadlineHeap()
        afterTimers = [:]
    }

    private func runDueTimers() {
        guard timers.nextDeadline != nil else { return }
        let now = MonotonicClock.nowNanos()
        while let next = timers.nextDeadline, next <= now {
            let action = timers.pop()
            action()
        }
        guard !afterTimers.isEmpty else { return }
        let work = afterTimers
        afterTimers = [:]
        for action in work.values { action() }
    }
}

/// A binary min-heap of actions by deadline; equal deadlines run in insertion order.
struct DeadlineHeap {
    private var items: [(deadline: UInt64, sequence: UInt64, action: () -> Void)] = []
    private var sequence: UInt64 = 0

    var nextDeadline: UInt64? { items.first?.deadline }

    private func less(_ a: Int, _ b: Int) -> Bool {
        items[a].deadline != items[b].deadline ? items[a].deadline < items[b].deadline : items[a].sequence < items[b].sequence
    }

    mutating func push(deadline: UInt64, _ action: @escaping () -> Void) {
        sequence += 1
        items.append((deadline, sequence, action))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(i, parent) else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> () -> Void {
        let top = items[0].action
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < items.count, less(l, m) { m = l }
                if r < items.count, less(r, m) { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}

/// O_NONBLOCK and FD_CLOEXEC on a descriptor.
func setNonBlocking(_ fd: Int32) {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
}
