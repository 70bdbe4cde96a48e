import CSystem
import Glibc

/// Dedicated OS threads for the loops that block (poll, librabbitmq, libpq, SQLite), without
/// Foundation's `Thread`: the shipped binary links FoundationEssentials only, not libFoundation
/// and its ICU data, which were ~10 MiB of every process's resident memory.
public enum OSThread {
    /// Starts `body` on a new detached thread named `name` (the kernel keeps its first 15 bytes).
    /// A thread that cannot be created stops the process: nothing could run without it.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { raw in
            guard let raw else { return nil }
            let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
            _ = pc_set_thread_name(start.name)
            start.body()
            return nil
        }, context)
        pthread_attr_destroy(&attributes)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            fatalError("cannot start the \(name) thread: pthread_create returned \(status)")
        }
    }

    /// Blocks the calling thread (never a task of the cooperative pool) for `seconds`.
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    private final class Start: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
