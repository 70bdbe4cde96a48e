import CRabbitMQ
import FoundationEssentials
import Glibc
import OSThread
import Synchronization

/// A confirming publisher that lives on the thread of a `PollLoop` (a lane's consumer thread) as
/// one of its sources: publishes are written, and their confirms read and called back, on that
/// thread, with no inbox and no wake-up between the job and its results (docs/decisions/0086).
///
/// Nothing it does on the loop's thread may block it, since the loop also carries the lane's
/// consumer (its acks and heartbeats) and HTTP/2 connections:
/// - the connection is opened on a short-lived thread of its own and handed in through a wake-up;
/// - publishes are gathered (`PublishFrames`) and written with non-blocking sends: what the socket
///   does not take stays for the next `POLLOUT`, and while a frame is partly written (or TLS
///   holds back part of a record) nothing is read (librabbitmq may write a heartbeat from a read,
///   which would split the frame, or which OpenSSL would refuse);
/// - over TLS the gathered bytes go through librabbitmq's SSL socket, written as far as it takes
///   them like a plain socket (`AMQPConnection.writeAvailable`, decision 0090); only with a
///   librabbitmq whose socket layout is unknown (`isAvailable`) does a TLS broker keep
///   `ConfirmingPublisher` and its thread.
///
/// It takes a publish only while open and healthy (`publish` returns false otherwise, and the
/// caller uses its `ConfirmingPublisher`): not while opening, not while the broker has it blocked
/// (a resource alarm), not after a basic.nack or a closed channel (it *retires*: finishes what
/// it has in flight, then closes, as a refusing queue keeps refusing on the channel that saw it
/// refuse). A lost connection, a confirm missing for `confirmTimeout` or a write error fail every
/// publish in flight with the error, like `ConfirmingPublisher`; the owner then makes another
/// (`successor`), which waits a backoff first when this one never opened.
///
/// Thread-confined: made, used and ended on its loop's thread. Whether the broker has it blocked
/// is reported to other threads through `blockedChanged`.
public final class LoopPublisher: PollSource {
    private enum State {
        /// Waiting until the instant (backoff) before opening.
        case waiting(until: UInt64)
        /// A short-lived thread is opening the connection.
        case opening(Opening)
        case open(AMQPConnection)
        case dead
    }

    private let settings: AMQPSettings
    private let options: ConfirmingPublisher.Options
    private let blockedChanged: @Sendable (Bool) -> Void
    private var state: State
    private var tracker = ConfirmTracker<BatchConfirms.Waiter>()
    private var frames: PublishFrames
    /// Bytes of `frames` already written.
    private var written = 0
    private var flowBlocked = false
    private var retiring = false
    private var unblockedAt = ContinuousClock.now
    /// When the connection is read next even if poll(2) reports nothing (librabbitmq's heartbeats).
    private var nextRead: UInt64 = 0
    private let readEvery: UInt64
    /// Failed opens in a row before this publisher (0: the last one opened, or none came before).
    private let failedOpens: Int
    /// True once its connection opened (its successor then opens without a backoff).
    private var opened = false

    /// Writes that left part of the gathered frames for a later `POLLOUT` (for tests).
    public private(set) var partialWrites = 0

    /// True when a publisher of this kind can serve `settings`: plain TCP to every node, or TLS
    /// with a librabbitmq whose SSL socket it can write to without waiting.
    public static func isAvailable(for settings: AMQPSettings) -> Bool {
        AMQPConnection.tlsFramesSupported || settings.nodes.allSatisfy { $0.tls == nil }
    }

    /// Starts opening a connection at once (or after the backoff `failedOpens` calls for).
    public init(settings: AMQPSettings, options: ConfirmingPublisher.Options, failedOpens: Int = 0,
                blockedChanged: @escaping @Sendable (Bool) -> Void = { _ in }) {
        self.settings = settings
        self.options = options
        self.failedOpens = failedOpens
        self.blockedChanged = blockedChanged
        readEvery = UInt64(loopPollMillis(settings)) * 1_000_000
        frames = PublishFrames(frameMax: settings.frameMax)
        state = .waiting(until: PollLoop.now() &+ Self.backoff(afterFailures: failedOpens))
    }

    /// The publisher to make when this one is dead: it waits a backoff first when this one never
    /// opened (a broker that refuses is not asked again at once by every job).
    public func successor() -> LoopPublisher {
        LoopPublisher(settings: settings, options: options, failedOpens: opened ? 0 : failedOpens + 1,
                      blockedChanged: blockedChanged)
    }

    /// 0 after no failure, then 0.5 s doubling up to 30 s.
    static func backoff(afterFailures failures: Int) -> UInt64 {
        guard failures > 0 else { return 0 }
        return min(30_000_000_000, 500_000_000 << UInt64(min(failures - 1, 6)))
    }

    /// True once it can take no more publishes (its connection failed, closed or never opened):
    /// the owner replaces it with `successor()`.
    public var isDead: Bool {
        if case .dead = state { return true }
        return false
    }

    /// True while it takes publishes: open, not blocked by the broker, not retiring.
    public var isTaking: Bool {
        guard case .open = state else { return false }
        return !flowBlocked && !retiring
    }

    /// Publishes `messages` in order and calls `settled` on this thread once the broker settled
    /// every one (nil where it confirmed, the error where not); false, with nothing published and
    /// `settled` never called, when it does not take publishes now (`isTaking`).
    public func publish(batch messages: [ConfirmingPublisher.Outgoing], settled: @escaping @Sendable ([AMQPError?]) -> Void) -> Bool {
        guard isTaking else { return false }
        let batch = BatchConfirms(count: messages.count, settled)
        let now = ContinuousClock.now
        for (index, m) in messages.enumerated() {
            do {
                try frames.append(channel: 1, exchange: m.exchange, routingKey: m.routingKey, body: m.body,
                                  properties: m.properties, mandatory: true)
                tracker.add(BatchConfirms.Waiter(batch: batch, index: index), m, at: now)
            } catch {
                batch.settle(index, .failure(error))  // never written: nothing else settles it
            }
        }
        return true  // written by the loop's next pass, before it sleeps
    }

    // MARK: PollSource

    public func pass(now: UInt64) -> UInt64? {
        switch state {
        case .waiting(let until):
            guard now >= until else { return until }
            beginOpening()
            return nil
        case .opening, .dead:
            return nil
        case .open(let connection):
            do throws(AMQPError) {
                try flush(connection)
                if !flowBlocked, let sentAt = tracker.oldestSentAt,
                   ContinuousClock.now - max(sentAt, unblockedAt) > options.confirmTimeout {
                    throw .confirmTimeout(options.confirmTimeout)
                }
                if !isBetweenFrames(connection) {
                    nextRead = now &+ readEvery  // no read now: wait for the socket, not spin on a past deadline
                } else if now >= nextRead || connection.hasBufferedData {
                    try read(connection, now: now)
                }
                if retiring && tracker.isEmpty && frames.isEmpty { return finish(connection, AMQPError.closed("the publisher")) }
            } catch {
                return finish(connection, error)
            }
            return nextRead
        }
    }

    public func interests(into fds: inout [pollfd]) {
        switch state {
        case .opening(let opening):
            fds.append(pollfd(fd: opening.wakeup.fd, events: Int16(POLLIN), revents: 0))
        case .open(let connection):
            // While a frame is partly written only what the write waits for matters (reads wait).
            let events = written < frames.bytes.count ? connection.writeWaitsFor : Int16(POLLIN)
            fds.append(pollfd(fd: connection.socketFD, events: events, revents: 0))
        case .waiting, .dead:
            break
        }
    }

    public func handle(_ polled: ArraySlice<pollfd>) {
        guard let event = polled.first else { return }
        switch state {
        case .opening(let opening):
            opening.wakeup.consume()
            if let result = opening.take() { opened(result, opening) }
        case .open(let connection):
            do throws(AMQPError) {
                // An error or hang-up while a frame is partly written surfaces from the write.
                // (A TLS write may wait for POLLIN: it reads the socket itself.)
                if event.revents & Int16(POLLOUT | POLLIN | POLLERR | POLLHUP) != 0 { try flush(connection) }
                if isBetweenFrames(connection), event.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
                    try read(connection, now: PollLoop.now())
                }
            } catch {
                _ = finish(connection, error)
            }
        case .waiting, .dead:
            break
        }
    }

    public var isBusy: Bool {
        guard case .open = state else { return false }
        return !tracker.isEmpty
    }

    public func end() {
        switch state {
        case .opening(let opening):
            if case .success(let box)? = opening.abandon() { box.connection.close(timeout: options.closeTimeout) }
            opening.wakeup.close()
        case .open(let connection):
            _ = finish(connection, AMQPError.closed("the publisher"), closing: true)
        case .waiting, .dead:
            break
        }
        state = .dead
    }

    // MARK: opening

    /// A connection being opened on a short-lived thread, and the hand-in of its result.
    final class Opening: Sendable {
        /// A connection handed from the thread that opened it to the loop's thread, once.
        struct Handed: @unchecked Sendable { let connection: AMQPConnection }

        let wakeup: LoopWakeup
        private let slot = Mutex<(result: Result<Handed, AMQPError>?, abandoned: Bool)>((nil, false))

        init(wakeup: LoopWakeup) { self.wakeup = wakeup }

        /// From the opening thread: false when the loop gave up on it (the caller closes).
        func deliver(_ result: Result<Handed, AMQPError>) -> Bool {
            slot.withLock { s in
                guard !s.abandoned else { return false }
                s.result = result
                wakeup.signal()  // under the lock: `abandon` then closes the descriptor safely
                return true
            }
        }

        /// On the loop's thread: the result, once delivered.
        func take() -> Result<Handed, AMQPError>? { slot.withLock { $0.result } }

        /// On the loop's thread, when it ends first: nothing is delivered (or signalled) after
        /// this; returns what was delivered before, to close.
        func abandon() -> Result<Handed, AMQPError>? {
            slot.withLock { s in
                s.abandoned = true
                return s.result
            }
        }
    }

    private func beginOpening() {
        let wakeup: LoopWakeup
        do { wakeup = try LoopWakeup() } catch {
            state = .dead
            return
        }
        let opening = Opening(wakeup: wakeup)
        state = .opening(opening)
        let settings = settings, closeTimeout = options.closeTimeout
        OSThread.start(name: "amqp-open") {
            let result: Result<Opening.Handed, AMQPError>
            do throws(AMQPError) {
                let connection = try AMQPConnection(settings: settings)
                try ConfirmingPublisher.selectConfirms(connection)
                result = .success(Opening.Handed(connection: connection))
            } catch {
                result = .failure(error)
            }
            if !opening.deliver(result), case .success(let box) = result { box.connection.close(timeout: closeTimeout) }
        }
    }

    private func opened(_ result: Result<Opening.Handed, AMQPError>, _ opening: Opening) {
        opening.wakeup.close()  // the opening thread signalled for the last time
        switch result {
        case .success(let box):
            opened = true
            frames = PublishFrames(frameMax: box.connection.frameMax)
            nextRead = PollLoop.now() &+ readEvery
            state = .open(box.connection)
        case .failure:
            state = .dead  // the owner's successor waits a backoff; its publishes went elsewhere
        }
    }

    // MARK: open

    /// True when nothing is half written: no frame partly sent, no TLS record held back. Only then
    /// may the connection be read (librabbitmq writes heartbeats from reads) or closed politely.
    private func isBetweenFrames(_ connection: AMQPConnection) -> Bool {
        written == 0 && !connection.tlsRecordPending
    }

    /// Writes what the socket takes of the gathered frames.
    private func flush(_ connection: AMQPConnection) throws(AMQPError) {
        guard written < frames.bytes.count else { return }
        written += try connection.writeAvailable(frames.bytes, from: written)
        if written == frames.bytes.count {
            frames.removeAll()
            written = 0
        } else {
            partialWrites += 1
        }
    }

    /// Reads what is there (confirms, returns, flow changes); services heartbeats.
    private func read(_ connection: AMQPConnection, now: UInt64) throws(AMQPError) {
        nextRead = now &+ readEvery
        var count = 0
        while count < 1024, let frame = try connection.nextFrame(timeoutMicros: 0) {
            count += 1
            switch frame {
            case .ack, .returned:
                settle { tracker.apply(frame, resume: $0) }
            case .nack:
                retiring = true
                settle { tracker.apply(frame, resume: $0) }
            case .channelClosed(_, let error):
                throw error
            case .blocked(let reason):
                setBlocked(true)
                options.onFlowChange?(.blocked(reason: reason))
            case .unblocked:
                setBlocked(false)
                unblockedAt = .now
                options.onFlowChange?(.unblocked)
            default:
                break
            }
            connection.releaseBuffers()
        }
    }

    /// Runs `change` on the tracker and only then calls back the batches it settled: a batch's
    /// callback may publish again on this publisher (a job acked frees room for the next, whose
    /// messages come at once), which adds to the tracker; called from inside the change, that
    /// access overlapped the tracker's own and the exclusivity check stopped the process.
    private func settle(_ change: (_ resume: (BatchConfirms.Waiter, Result<Void, AMQPError>) -> Void) -> Void) {
        var settled: [(BatchConfirms.Waiter, Result<Void, AMQPError>)] = []
        change { settled.append(($0, $1)) }
        for (waiter, result) in settled { waiter.settle(result) }
    }

    private func setBlocked(_ blocked: Bool) {
        guard blocked != flowBlocked else { return }
        flowBlocked = blocked
        blockedChanged(blocked)
    }

    /// Fails what is in flight with `error`, closes the connection and is dead. The close
    /// handshake waits for the broker's answer, so it is done only when the thread ends
    /// (`closing`) and the broker can still read it; otherwise the socket is just dropped.
    private func finish(_ connection: AMQPConnection, _ error: AMQPError, closing: Bool = false) -> UInt64? {
        state = .dead
        let polite = closing && connection.isOpen && !flowBlocked && isBetweenFrames(connection)
        setBlocked(false)
        frames.removeAll()
        written = 0
        settle { tracker.failAll(error, resume: $0) }
        connection.close(timeout: options.closeTimeout, polite: polite)
        return nil
    }
}
