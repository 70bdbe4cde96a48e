import AMQP
import FoundationEssentials
import PushCore
import ServiceRuntime
import Synchronization

/// The fleet's cancels and App ID pauses as this process knows them: it reads the durable control
/// log (`Topology.controlLog`, a stream) from the start of its retention before the lanes start
/// (`catchUp`), then follows it (`run`), reopening the stream from the next offset after a lost
/// connection. The job processor asks `verdict(for:)` of every job before sending it: a cancelled
/// campaign's recipients get `cancelled` results, a paused App ID's jobs wait in a retry tier.
///
/// While the log cannot be read the last known state holds (logged); a record that is not valid
/// is skipped with a warning (it changes nothing).
public final class FleetControl: Service {
    /// What a job must do instead of being sent.
    public enum Verdict: Sendable, Equatable {
        case cancel(ControlRecord)
        case pause(ControlRecord)
    }

    private let settings: AMQPSettings
    private let topology: Topology
    private let logger: Logger
    private let book = Mutex(ControlBook())
    private let nextOffset = Mutex<Int64?>(nil)
    private let reader = Mutex<StreamReader?>(nil)
    private let reconnectBackoff = Backoff(initial: .milliseconds(200), max: .seconds(10))
    /// Records applied since start (tests, logs).
    public var applied: Int { appliedCount.load(ordering: .relaxed) }
    private let appliedCount = Atomic(0)
    /// Set once the start-up read is done: records read before are logged at debug level (a
    /// 31-day log holds thousands; "control log read" sums them up), later ones at info.
    private let caughtUp = Atomic(false)

    public init(settings: AMQPSettings, topology: Topology, logger: Logger) {
        self.settings = settings
        self.topology = topology
        self.logger = logger.child("control")
    }

    /// The cancel or pause a job of `job` meets now, if any (a cancel first).
    public func verdict(for job: SendJob, nowMillis: Int64 = FleetControl.epochMillis()) -> Verdict? {
        book.withLock { book in
            if let cancel = book.cancel(appID: job.appID, campaign: job.campaign, jobID: job.jobID, now: nowMillis) { return .cancel(cancel) }
            return book.pause(appID: job.appID, now: nowMillis).map(Verdict.pause)
        }
    }

    /// How many App IDs are paused now (the `push_connector_app_ids_paused` gauge; the reasons
    /// are free text, kept out of labels: `cancel list` shows them).
    public func pausedAppIDs(nowMillis: Int64 = FleetControl.epochMillis()) -> Int {
        Set(book.withLock { $0.active(now: nowMillis) }.filter { $0.kind == .pause }.map { $0.appID ?? "" }).count
    }

    /// Reads the log from the start of its retention until nothing came for `quiet`, so that the
    /// lanes start knowing every cancel and pause. Throws when the log cannot be read.
    public func catchUp(quiet: Duration = .milliseconds(300)) async throws {
        let opened = try await open()
        while let delivery = try await opened.next(within: quiet) { apply(delivery) }
        let active = book.withLock { $0.active(now: Self.epochMillis()) }
        caughtUp.store(true, ordering: .relaxed)
        logger.info("control log read", ["records": "\(applied)", "in_force": "\(active.count)"])
    }

    /// Follows the log until `shutdown`, reopening it with backoff from the next offset.
    public func run(until shutdown: ShutdownSignal) async {
        var failures = 0
        while !shutdown.isTriggered {
            do {
                let kept = reader.withLock { $0 }
                let current: StreamReader
                if let kept { current = kept } else { current = try await open() }
                failures = 0
                while !shutdown.isTriggered {
                    if let delivery = try await current.next(within: .milliseconds(250)) { apply(delivery) }
                }
            } catch {
                failures += 1
                let delay = reconnectBackoff.delay(afterFailures: failures)
                logger.warning("control log lost, reopening; the cancels and pauses known stay in force",
                               ["error": "\(error)", "in": "\(delay)"])
                await closeReader()
                await shutdown.sleep(for: delay)
            }
        }
        await closeReader()
    }

    private func open() async throws -> StreamReader {
        let from = nextOffset.withLock { $0 }.map(StreamOffset.offset) ?? .first
        let opened = try await StreamReader(settings: settings, stream: topology.controlLog, from: from, prefetch: 100)
        reader.withLock { $0 = opened }
        return opened
    }

    private func closeReader() async {
        let current = reader.withLock { r -> StreamReader? in
            defer { r = nil }
            return r
        }
        await current?.close()
    }

    private func apply(_ delivery: Delivery) {
        if let offset = delivery.streamOffset { nextOffset.withLock { $0 = offset + 1 } }
        do {
            let now = Self.epochMillis()
            let record = try ControlRecord.decode(delivery.body, now: now)
            book.withLock {
                $0.apply(record, now: now)
                $0.prune(now: now)
            }
            appliedCount.add(1, ordering: .relaxed)
            // Summed up by the catch-up's one line; a summary is built only for a line written.
            if caughtUp.load(ordering: .relaxed) {
                logger.info("control record", ["record": record.summary])
            } else if logger.isDebugEnabled {
                logger.debug("control record", ["record": record.summary])
            }
        } catch {
            logger.warning("control log record skipped", ["error": "\(error)", "offset": delivery.streamOffset.map(String.init) ?? "?"])
        }
    }

    public static func epochMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
