import CSystem
import Glibc
import Synchronization

/// The wake-up of a loop thread that sleeps in poll(2): an eventfd the loop polls for `POLLIN`,
/// which `signal` (from any thread) makes readable until the loop `consume`s it. Several signals
/// before a consume cost one wake-up. The descriptor lives until `close()`, or this object.
public final class LoopWakeup: Sendable {
    private let descriptor: Atomic<Int32>

    /// Fails (with errno) when no descriptor can be made, e.g. at the nofile limit.
    public init() throws(LoopWakeupError) {
        let fd = pc_eventfd_nonblocking()
        guard fd >= 0 else { throw LoopWakeupError(errno: errno) }
        descriptor = Atomic(fd)
    }

    deinit { close() }

    /// The descriptor to poll for `POLLIN` (-1 once closed, which poll(2) skips).
    public var fd: Int32 { descriptor.load(ordering: .acquiring) }

    /// Makes `fd` readable (from any thread).
    @Sendable public func signal() {
        var one: UInt64 = 1
        let fd = fd
        if fd >= 0 { _ = Glibc.write(fd, &one, 8) }
    }

    /// Resets `fd` after poll(2) saw it readable (on the loop's thread).
    public func consume() {
        var count: UInt64 = 0
        let fd = fd
        if fd >= 0 { _ = Glibc.read(fd, &count, 8) }
    }

    /// Closes the descriptor now (idempotent). Only once nothing can `signal` any more (the
    /// inbox closed and the loop stopped): a signal racing a close could write to a reused number.
    public func close() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        if fd >= 0 { Glibc.close(fd) }
    }
}

/// A wake-up descriptor could not be made.
public struct LoopWakeupError: Error, Sendable, CustomStringConvertible {
    public let errno: Int32

    public var description: String {
        let reason = String(validatingCString: strerror(errno)) ?? "errno \(errno)"
        let hint = errno == EMFILE || errno == ENFILE ? " (out of file descriptors: raise the nofile limit)" : ""
        return "cannot create a wake-up descriptor for a loop thread: \(reason)\(hint)"
    }
}
