import Glibc

/// A mutex and its condition variable, for a dedicated thread that sleeps until it is signalled
/// or a deadline passes (Foundation's `NSCondition`, without linking Foundation). Timed waits
/// use the monotonic clock, so a wall-clock step does not stretch or cut them.
public final class OSCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the mutex.
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Wakes one thread waiting on the condition (call holding the mutex).
    public func signal() { pthread_cond_signal(condition) }

    /// Wakes every thread waiting on the condition (call holding the mutex).
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits until signalled (holding the mutex; it is released meanwhile). Wakes spuriously at times.
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits until signalled or `deadline` passed (holding the mutex; it is released meanwhile);
    /// false once the deadline passed.
    public func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let remaining = deadline - .now
        guard remaining > .zero else { return false }
        return wait(for: remaining)
    }

    /// Waits until signalled or `timeout` passed (holding the mutex; it is released meanwhile);
    /// false when the time ran out.
    @discardableResult
    public func wait(for timeout: Duration) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let (seconds, attoseconds) = max(timeout, .zero).components
        let nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
        deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }
}
