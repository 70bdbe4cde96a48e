import FoundationEssentials

/// The publishes a confirm-mode channel has written and the broker has not settled yet, by
/// publish sequence number (the channel counts from 1, one per basic.publish): pure bookkeeping
/// of the publisher's connection thread, no I/O and no clock (the caller passes `now`).
///
/// The broker settles a publish with basic.ack or basic.nack, one tag or every tag up to it
/// (`multiple`). A basic.return (mandatory, routed nowhere) comes before that ack and names no
/// tag: it is matched to the oldest unsettled publish of the same exchange, routing key and body,
/// whose ack then settles it as failed. A closed channel fails everything and the next channel
/// counts from 1 again.
///
/// `Waiter` is whoever waits for the outcome; settling hands each one to a `resume` closure, so
/// the tracker never calls out on its own and tests can use plain values.
struct ConfirmTracker<Waiter> {
    struct Entry {
        var waiter: Waiter
        var sentAt: ContinuousClock.Instant
        var message: ConfirmingPublisher.Outgoing
        /// Set by a basic.return matched to this publish: its ack then fails with it.
        var returned: AMQPError?
    }

    private(set) var waiting: [UInt64: Entry] = [:]
    /// The lowest tag that may still be unsettled.
    private(set) var lowest: UInt64 = 1
    /// The tag the next publish gets.
    private(set) var next: UInt64 = 1

    var isEmpty: Bool { waiting.isEmpty }
    var count: Int { waiting.count }

    /// Records a publish written at `now`; returns its tag.
    @discardableResult
    mutating func add(_ waiter: Waiter, _ message: ConfirmingPublisher.Outgoing, at now: ContinuousClock.Instant) -> UInt64 {
        let tag = next
        waiting[tag] = Entry(waiter: waiter, sentAt: now, message: message)
        next += 1
        return tag
    }

    /// When the oldest unsettled publish was written, if any.
    var oldestSentAt: ContinuousClock.Instant? { waiting[lowest]?.sentAt }

    /// Marks the oldest unsettled, not yet returned publish of this exchange, routing key and
    /// body as returned. False when none matches (the return is then ignored).
    mutating func markReturned(exchange: String, routingKey: String, body: Data, _ error: AMQPError) -> Bool {
        var tag = lowest
        while tag < next {
            if let entry = waiting[tag], entry.returned == nil, entry.message.exchange == exchange,
               entry.message.routingKey == routingKey, entry.message.body == body {
                waiting[tag]?.returned = error
                return true
            }
            tag += 1
        }
        return false
    }

    /// basic.ack (`result` success) or basic.nack (failure) of `tag`, or of every tag up to it
    /// when `multiple`. A returned publish settles with its return's error whatever the result.
    /// Tags already settled or never written are ignored.
    mutating func settle(_ tag: UInt64, multiple: Bool, _ result: Result<Void, AMQPError>,
                         resume: (Waiter, Result<Void, AMQPError>) -> Void) {
        func settled(_ entry: Entry?) {
            guard let entry else { return }
            resume(entry.waiter, entry.returned.map { .failure($0) } ?? result)
        }
        if multiple {
            while lowest <= tag && lowest < next {
                settled(waiting.removeValue(forKey: lowest))
                lowest += 1
            }
        } else {
            settled(waiting.removeValue(forKey: tag))
        }
        while lowest < next && waiting[lowest] == nil { lowest += 1 }
    }

    /// Settles what a confirm frame says: basic.ack, basic.nack (`.nacked`) or basic.return
    /// (`.returned`, matched by `markReturned`); any other frame is left to the caller.
    mutating func apply(_ frame: IncomingFrame, resume: (Waiter, Result<Void, AMQPError>) -> Void) {
        switch frame {
        case .ack(let tag, let multiple): settle(tag, multiple: multiple, .success(()), resume: resume)
        case .nack(let tag, let multiple): settle(tag, multiple: multiple, .failure(.nacked()), resume: resume)
        case .returned(let code, let text, let exchange, let key, let body):
            let error = AMQPError.returned("'\(exchange)' routed '\(key)' to no queue: \(text)", replyCode: code)
            _ = markReturned(exchange: exchange, routingKey: key, body: body, error)
        default: break
        }
    }

    /// Fails everything and restarts numbering (a new channel counts from 1 again).
    mutating func failAll(_ error: AMQPError, resume: (Waiter, Result<Void, AMQPError>) -> Void) {
        for tag in waiting.keys.sorted() { resume(waiting[tag]!.waiter, .failure(error)) }
        waiting = [:]
        lowest = 1
        next = 1
    }
}
