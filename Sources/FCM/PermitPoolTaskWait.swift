import OSThread

extension PermitPool {
    /// Runs `body` once a permit is taken for it: at once on the caller's thread when one is
    /// free, otherwise in a task that waits for one (not on the thread of the `release` that frees
    /// it, which may be another lane's). `body` owns the permit and must give it back.
    func withPermitTaken(_ body: @escaping @Sendable () -> Void) {
        guard tryAcquire() else {
            Task {
                await acquire()
                body()
            }
            return
        }
        body()
    }
}
