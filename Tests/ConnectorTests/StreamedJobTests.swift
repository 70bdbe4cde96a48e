import AMQP
import EmulatorKit
import FCM
import Foundation
import PushCore
@testable import PushWorker
import Synchronization
import Testing
@testable import Connector
import OSThread

/// A job's recipients stream through the send window one permit at a time: composed just before
/// they are sent, never the whole job up front (real emulator, real FCM client, no broker).
@Suite(.timeLimit(.minutes(1))) struct StreamedJobTests {
    /// The in-process emulator, an App ID whose credentials it trusts, and a processor sending to it.
    final class Setup: Sendable {
        let emulator: FCMEmulator
        let client: FCMClient
        let directory: String
        let processor: JobProcessor

        init(window: Int, admission: Int? = nil, latency: Latency = .none) throws {
            directory = try temporaryDirectory()
            var configuration = EmulatorConfiguration()
            configuration.latency = latency
            emulator = try FCMEmulator(configuration: configuration)
            try emulator.start()
            let accountPath = directory + "/sa.json"
            let account = try ServiceAccountFactory.make(projectID: "shop-prod",
                                                         clientEmail: ServiceAccountFactory.defaultClientEmail(projectID: "shop-prod"),
                                                         tokenURI: emulator.tokenURL)
            try account.write(toFile: accountPath, atomically: true, encoding: .utf8)
            try emulator.trustServiceAccount(json: account)
            var fcm = FCMClient.Configuration()
            fcm.baseURL = emulator.baseURL
            fcm.transport.requestTimeout = .seconds(10)
            client = FCMClient(configuration: fcm)
            let registry = AppRegistry([AppConfiguration(appID: "shop-android", projectID: "shop-prod", credentialsFile: accountPath,
                                                         defaultPayload: ["pushdata.source": "crm"])])
            var processor = JobProcessor(registry: registry, sender: try FCMPushSender(client: client, registry: registry),
                                         topology: Topology(prefix: "t", retryDelaysSeconds: [1]))
            processor.sendWindow = PermitPool(capacity: window)
            processor.unsentGauge = HighWaterGauge()
            processor.jobAdmission = admission.map { PermitPool(capacity: $0) }
            processor.admittedGauge = HighWaterGauge()
            self.processor = processor
        }

        deinit {
            client.shutdown()
            emulator.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static func job(recipients: Int, id: String) -> Data {
        let list = (0..<recipients).map { #"{"token":"dev-\#($0)"}"# }.joined(separator: ",")
        return Data(#"{"job_id":"\#(id)","app_id":"shop-android","notification":{"title":"T"},"recipients":[\#(list)]}"#.utf8)
    }

    /// Processes `body` in the background, failing (instead of hanging) if it does not finish in time.
    func processWithin(_ setup: Setup, _ body: Data, seconds: Int = 30) async throws -> [OutboundMessage] {
        let out = Mutex<[OutboundMessage]?>(nil)
        let processor = setup.processor
        Task { let messages = await processor.process(body: body, headers: [:]); out.withLock { $0 = messages } }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            if let messages = out.withLock({ $0 }) { return messages }
            guard ContinuousClock.now < deadline else { throw FixtureError("the job did not finish within \(seconds) s (stuck in the window?)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func sentResults(_ messages: [OutboundMessage]) throws -> [SendResult] {
        try messages.filter { $0.kind == .result }.map { try SendResult.decode(JSONValue.parse($0.body)) }
    }

    @Test func aJobWithMoreRecipientsThanTheWholeWindowIsDeliveredOnceToEachRecipient() async throws {
        let setup = try Setup(window: 4)
        let messages = try await processWithin(setup, Self.job(recipients: 50, id: "wide"))
        let results = try sentResults(messages)
        #expect(results.count == 50 && results.allSatisfy { $0.outcome == .sent }, "\(results.map(\.outcome))")
        #expect(messages.allSatisfy { $0.kind == .result }, "no retry and no dead letter: \(messages.map(\.kind))")
        let tokens = setup.emulator.recordedMessages().compactMap(\.token)
        #expect(tokens.sorted() == (0..<50).map { "dev-\($0)" }.sorted(), "each recipient exactly once")
        #expect(setup.processor.sendWindow?.available == 4, "every permit given back")
    }

    @Test func composedButUnsentMessagesOfA1000RecipientJobStayWithinTheWindow() async throws {
        let setup = try Setup(window: 8, latency: .fixed(.milliseconds(2)))
        let messages = try await processWithin(setup, Self.job(recipients: 1_000, id: "big"), seconds: 50)
        #expect(try sentResults(messages).filter { $0.outcome == .sent }.count == 1_000)
        #expect(setup.emulator.recordedMessages().count == 1_000)
        let gauge = try #require(setup.processor.unsentGauge)
        #expect(gauge.current == 0)
        #expect(gauge.highest >= 2, "sends overlapped (else the bound says nothing)")
        #expect(gauge.highest <= 8, "at most the window composed and unsent at once, got \(gauge.highest)")
    }

    /// The lane gave up (its consumer connection is gone) in the middle of a job: nothing further
    /// is sent; what was sent stays sent once. Before the first send: no message at all.
    @Test func aLaneThatGivesUpMidJobSendsNothingFurther() async throws {
        let setup = try Setup(window: 1)
        let gaveUp = Atomic<Bool>(false)
        let emulator = setup.emulator
        let stop: @Sendable () -> Bool = {
            if emulator.recordedMessages().count >= 3 { gaveUp.store(true, ordering: .relaxed) }
            return gaveUp.load(ordering: .relaxed)
        }
        let processed = await setup.processor.processJob(body: Self.job(recipients: 10, id: "cut"), headers: [:],
                                                         on: .anywhere(givingUpWhen: stop))
        #expect(setup.emulator.recordedMessages().compactMap(\.token) == ["dev-0", "dev-1", "dev-2"])
        let results = try sentResults(processed.messages)
        #expect(results.map(\.outcome) == [.sent, .sent, .sent], "the sent ones are reported")
        #expect(processed.messages.filter { $0.kind == .retry }.count == 1, "the rest is planned as not sent")
        #expect(setup.processor.sendWindow?.available == 1)

        let none = await setup.processor.processJob(body: Self.job(recipients: 10, id: "none"), headers: [:],
                                                    on: .anywhere(givingUpWhen: { true }))
        #expect(none.messages.isEmpty)
        #expect(setup.emulator.recordedMessages().count == 3)
    }

    /// Prefetched jobs of many recipients are sent a few at a time (the job admission), not all
    /// advancing together; each recipient still gets exactly one send, and a job larger than the
    /// admission goes alone rather than never.
    @Test func jobsOfManyRecipientsAreSentAFewAtATimeWithinTheJobAdmission() async throws {
        let setup = try Setup(window: 4, admission: 40, latency: .fixed(.milliseconds(2)))
        let processor = setup.processor
        let bodies = (0..<6).map { Self.job(recipients: 20, id: "batch-\($0)") } + [Self.job(recipients: 50, id: "larger")]
        let messages = await withTaskGroup(of: [OutboundMessage].self) { group in
            for body in bodies {
                group.addTask { await processor.process(body: body, headers: [:]) }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        let results = try sentResults(messages)
        #expect(results.count == 170 && results.allSatisfy { $0.outcome == .sent })
        let tokens = setup.emulator.recordedMessages().compactMap(\.token)
        #expect(tokens.count == 170, "one send per recipient")
        let gauge = try #require(processor.admittedGauge)
        #expect(gauge.current == 0)
        #expect(gauge.highest == 2, "two 20-recipient jobs fill an admission of 40, got \(gauge.highest)")
        #expect(processor.jobAdmission?.available == 40 && processor.sendWindow?.available == 4, "every permit given back")
    }

    /// A job keeps its share of the admission after its sends, until the caller releases it (the
    /// worker: once its messages are confirmed); the job waiting behind it is started by that release.
    @Test func anAdmittedJobKeepsItsShareUntilReleasedAndTheReleaseStartsTheNext() async throws {
        let setup = try Setup(window: 4, admission: 40)
        let processor = setup.processor
        let started = Mutex<[AdmittedJob]>([])
        processor.admit(processor.intake(body: Self.job(recipients: 30, id: "first"), headers: [:])) { job in
            started.withLock { $0.append(job) }
        }
        let first = try #require(started.withLock { $0.first }, "admitted at once: the admission had room")
        let processed = await processor.process(first)
        #expect(try sentResults(processed.messages).count == 30)
        processor.admit(processor.intake(body: Self.job(recipients: 20, id: "second"), headers: [:])) { job in
            started.withLock { $0.append(job) }
        }
        #expect(started.withLock { $0.count } == 1, "the second job started while the first still held 30 of 40")
        #expect(processor.jobAdmission?.available == 10 && processor.jobAdmission?.queued == 1)
        processor.release(first)
        let second = try #require(started.withLock { $0.count == 2 ? $0[1] : nil }, "the release let the second job in")
        #expect(try sentResults(await processor.process(second).messages).count == 20)
        processor.release(second)
        #expect(processor.jobAdmission?.available == 40 && processor.admittedGauge?.current == 0)
        #expect(setup.emulator.recordedMessages().count == 50)
    }
}
