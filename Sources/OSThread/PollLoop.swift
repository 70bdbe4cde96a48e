import Glibc

/// Work that runs on a `PollLoop`'s thread: its descriptors join the loop's poll set, so that
/// one thread sleeps on all of them at once and everything the source does happens on it.
/// Used only on that thread (a source's own inbox, if it has one, is how other threads reach it).
public protocol PollSource: AnyObject {
    /// Does what is ready without blocking (takes its inbox, starts waiting work, expires
    /// deadlines); returns the monotonic instant (`PollLoop.now()`) by which it wants its next
    /// pass, or nil when only an event of its descriptors can give it work.
    func pass(now: UInt64) -> UInt64?
    /// Appends the descriptors it waits on, with their events.
    func interests(into fds: inout [pollfd])
    /// Handles what poll(2) reported for the descriptors it appended, in the same order.
    func handle(_ polled: ArraySlice<pollfd>)
    /// True while it holds work the thread must finish before it ends (requests in flight).
    var isBusy: Bool { get }
    /// The thread ends: fail what is left and close every descriptor.
    func end()
}

/// The poll set of one thread that owns sockets (an AMQP consumer's connection thread, the
/// HTTP/2 transport's own thread): the thread's owner turns it (`turn`) where it would have
/// polled its own descriptors alone, and sources other code attaches (`source(for:make:)`)
/// run on the same thread, between the owner's passes. A lane's consumer thread hosts the lane's
/// HTTP/2 connections this way, so that a job's request and answer stay on the thread that read
/// its delivery (docs/decisions/0085).
///
/// Thread-confined: made, turned and ended on one thread, which `PollLoop.current` names.
public final class PollLoop {
    private var sources: [(owner: ObjectIdentifier, source: any PollSource)] = []
    private var fds: [pollfd] = []
    private var ranges: [Range<Int>] = []

    /// Makes the calling thread's loop (`current` until `end`).
    public init() {
        pthread_setspecific(currentLoopKey, Unmanaged.passUnretained(self).toOpaque())
    }

    /// The loop of the calling thread; nil on a thread without one (the cooperative pool).
    public static var current: PollLoop? {
        guard let raw = pthread_getspecific(currentLoopKey) else { return nil }
        return Unmanaged<PollLoop>.fromOpaque(raw).takeUnretainedValue()
    }

    /// CLOCK_MONOTONIC in nanoseconds, the time base of `PollSource.pass`.
    public static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// True while a source is attached.
    public var hasSources: Bool { !sources.isEmpty }

    /// The source attached to this loop for the owner `key` names (`ObjectIdentifier(owner)`),
    /// made by `make` and attached the first time.
    public func source<Source: PollSource>(for key: ObjectIdentifier, make: () -> Source) -> Source {
        for entry in sources where entry.owner == key {
            if let found = entry.source as? Source { return found }
        }
        let made = make()
        sources.append((key, made))
        return made
    }

    /// Detaches the source attached for the owner `key` names (it ended by itself, e.g. its
    /// owner shut down), so that a later owner at the same address gets a new one.
    public func detach(_ key: ObjectIdentifier) {
        sources.removeAll { $0.owner == key }
    }

    /// One turn: every source's pass, then one poll(2) of `own` (the owner's descriptors, their
    /// `revents` filled in) and every source's interests, at most `timeoutMillis` (shorter when a
    /// source wants a pass sooner), then each source handles its events.
    public func turn(_ own: inout [pollfd], timeoutMillis: Int32) {
        var timeout = timeoutMillis
        let now = Self.now()
        for entry in sources {
            if let due = entry.source.pass(now: now) {
                timeout = min(timeout, due <= now ? 0 : Int32(clamping: (due - now + 999_999) / 1_000_000))
            }
        }
        fds.removeAll(keepingCapacity: true)
        ranges.removeAll(keepingCapacity: true)
        fds.append(contentsOf: own)
        for entry in sources {
            let start = fds.count
            entry.source.interests(into: &fds)
            ranges.append(start..<fds.count)
        }
        guard poll(&fds, nfds_t(fds.count), timeout) > 0 else {
            for index in own.indices { own[index].revents = 0 }
            return
        }
        for index in own.indices { own[index].revents = fds[index].revents }
        for (entry, range) in zip(sources, ranges) where fds[range].contains(where: { $0.revents != 0 }) {
            entry.source.handle(fds[range])
        }
    }

    /// Ends the loop: turns while a source is busy (at most `within` nanoseconds, so that the
    /// requests of a lane whose consumer went away still get their answers), then forgets the
    /// thread's loop (what the sources' last callbacks start goes elsewhere) and ends every source.
    public func end(within: UInt64) {
        let deadline = Self.now() &+ within
        var nothing: [pollfd] = []
        while sources.contains(where: { $0.source.isBusy }), Self.now() < deadline {
            turn(&nothing, timeoutMillis: 50)
        }
        pthread_setspecific(currentLoopKey, nil)
        let ending = sources
        sources.removeAll()
        for entry in ending { entry.source.end() }
    }
}

/// The thread-specific slot of `PollLoop.current`.
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()
