/// The confirms of one batch of publishes, gathered on the thread that reads them; calls its
/// caller back once, when the last one arrived (nil where the broker confirmed, the error where
/// it did not). Shared by both confirming publishers (`ConfirmingPublisher`, `LoopPublisher`).
final class BatchConfirms {
    private var outcomes: [AMQPError?]
    private var remaining: Int
    private let settled: @Sendable ([AMQPError?]) -> Void

    init(count: Int, _ settled: @escaping @Sendable ([AMQPError?]) -> Void) {
        outcomes = Array(repeating: nil, count: count)
        remaining = count
        self.settled = settled
        if count == 0 { settled([]) }
    }

    func settle(_ index: Int, _ result: Result<Void, AMQPError>) {
        if case .failure(let error) = result { outcomes[index] = error }
        remaining -= 1
        if remaining == 0 { settled(outcomes) }
    }

    /// Who waits for one message's confirm: its batch and its place in it.
    struct Waiter {
        let batch: BatchConfirms
        let index: Int

        func settle(_ result: Result<Void, AMQPError>) { batch.settle(index, result) }

        /// `settle`, in the shape `ConfirmTracker` resumes with.
        static func resume(_ waiter: Waiter, _ result: Result<Void, AMQPError>) { waiter.settle(result) }
    }
}
