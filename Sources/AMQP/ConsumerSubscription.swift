/// The consumer's subscription as its connection thread advances it: consuming, cancelled for a
/// resize of the prefetch, waiting for room to consume again, cancelled by its owner, or finished.
/// A pure value (no I/O): each event returns the one step the thread takes, so the states the
/// reader can be in are named and tested without a broker (`ConsumerSubscriptionTests`).
///
/// Resizing (`PrefetchSizer`) cancels the consumer and consumes again on the same channel: the
/// cancel-ok of a resize does not end the deliveries, the cancel-ok of the owner's `cancel` does.
/// An owner's cancel during a resize waits for the resize's cancel-ok and ends there; during a
/// wait for room (no consumer on the broker) it ends at once.
struct ConsumerSubscription: Sendable, Equatable {
    /// Where the subscription is.
    enum Phase: Sendable, Equatable {
        /// basic.consume is active.
        case consuming
        /// A basic.cancel was sent to consume again with this prefetch once the broker confirms it.
        case resizing(to: UInt16)
        /// No consumer on the broker: it consumes again with this prefetch once there is room.
        case waitingForRoom(UInt16)
        /// The owner's cancel was sent (or is carried by a resize's cancel); its cancel-ok ends it.
        case cancelling
        /// The deliveries ended: nothing more is handed out.
        case finished
    }

    /// What the connection thread does next.
    enum Step: Sendable, Equatable {
        case nothing
        /// basic.cancel the current consumer tag.
        case sendCancel
        /// basic.qos and basic.consume again with this prefetch.
        case consume(UInt16)
        /// Cancelled for a resize: no consumer until there is room (the prefetch reads 0).
        case hold
        /// The deliveries end without an error.
        case finishStream
    }

    private(set) var phase: Phase = .consuming

    /// True while a delivery still reaches the owner (until the deliveries end).
    var handsOutDeliveries: Bool { phase != .finished }

    /// The owner asked to stop (basic.cancel).
    mutating func cancel() -> Step {
        switch phase {
        case .consuming:
            phase = .cancelling
            return .sendCancel
        case .resizing:
            phase = .cancelling  // the resize's cancel-ok ends the deliveries
            return .nothing
        case .waitingForRoom:
            phase = .finished  // no consumer to cancel
            return .finishStream
        case .cancelling, .finished:
            return .nothing
        }
    }

    /// The broker confirmed a basic.cancel.
    mutating func cancelConfirmed() -> Step {
        switch phase {
        case .resizing(let target):
            phase = .waitingForRoom(target)
            return .hold
        case .consuming, .waitingForRoom, .cancelling:
            phase = .finished
            return .finishStream
        case .finished:
            return .nothing
        }
    }

    /// The broker cancelled the consumer (queue deleted, failover): the deliveries end with an error.
    mutating func cancelledByServer() {
        phase = .finished
    }

    /// One pass of the sizing: `resize` proposes a new prefetch while consuming, `mayConsume` says
    /// whether a waiting subscription has room for its prefetch now.
    mutating func size(resize: () -> UInt16?, mayConsume: (UInt16) -> Bool) -> Step {
        switch phase {
        case .consuming:
            guard let target = resize() else { return .nothing }
            phase = .resizing(to: target)
            return .sendCancel
        case .waitingForRoom(let target):
            guard mayConsume(target) else { return .nothing }
            phase = .consuming
            return .consume(target)
        case .resizing, .cancelling, .finished:
            return .nothing
        }
    }
}
