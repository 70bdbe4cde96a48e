import AMQP
import Foundation
import PushCore
import Testing
@testable import Connector

/// The worker when the broker refuses or withholds the confirms of what a job publishes: the
/// delivery stays unacked, nothing is sent to FCM twice, and the job completes once the broker
/// takes the messages again. Real broker, real emulator.
@Suite(.serialized, .timeLimit(.minutes(3))) struct WorkerPublishFaultTests {
    /// A retry tier or the DLQ refusing the job's copy (`max-length` + `reject-publish`).
    @Test(arguments: ["retry tier", "dead-letter queue"])
    func refusedCopyIsPublishedAgainAndNoRecipientIsSentTwice(_ target: String) async throws {
        let toDLQ = target == "dead-letter queue"
        // A long tier: the filler must not expire out of the refusing queue during the test.
        let f = try await PipelineFixture(ownVhost: true, retryTiers: [300])
        let queue = toDLQ ? f.topology.deadLetterQueue : f.topology.retryTiers[0].queue
        let fillers = try await f.refusePublishes(on: queue)
        defer { _ = try? f.allowPublishes(on: queue) }
        let worker = try f.makeWorker(maxAttempts: toDLQ ? 1 : 3)
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("refused", tokens: ["dev-ok", "unavailable-dev"])])

        // dev-ok's result is confirmed; the copy is refused and published again, never re-sent.
        try await eventually("the copy refused three times") { worker.counters.republished.load(ordering: .relaxed) >= 3 }
        #expect(try f.unackedDeliveries() == 1, "the delivery must stay unacked while its copy is refused")
        try await f.publish([jobJSON("later", tokens: ["dev-later"])])
        // Into the DLQ, the copy comes with a dead_lettered result, confirmed (once) like the others.
        let early = try await f.results(toDLQ ? 3 : 2)
        #expect(Set(early.map(\.target.value)) == Set(["dev-ok", "dev-later"] + (toDLQ ? ["unavailable-dev"] : [])), "the worker keeps going")
        #expect(f.sends(to: "dev-ok") == 1)
        #expect(f.emulator.stats().count("UNAVAILABLE") == 1)

        try f.allowPublishes(on: queue)
        try await eventually("the job acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        let copies = try f.drain(queue).filter { !f.isFiller($0) }
        #expect(copies.count == 1, "exactly one copy of the job (\(fillers) fillers aside)")
        let copy = try SendJob.decode(try #require(copies.first).body)
        guard case .recipients(let list) = copy.target else { Issue.record("no recipients"); return }
        #expect(list.map(\.token) == ["unavailable-dev"])
        #expect(try await f.remainingResults().isEmpty, "no result published twice")
        #expect(f.sends(to: "dev-ok") == 1)
        #expect(f.emulator.stats().count("UNAVAILABLE") == 1, "the failing recipient was attempted once")
    }

    /// Ack only after confirm: a queue bound to the results exchange (an upstream's) refuses, so
    /// the broker nacks the results; the delivery stays unacked, no result reaches that queue,
    /// nothing is sent twice; lifting the policy gives exactly one result each there. A job of
    /// one target publishes from the callbacks of its send and confirms, a job of two from a task.
    @Test(arguments: [["dev-h1"], ["dev-h1", "dev-h2"]])
    func refusedResultKeepsTheDeliveryUnackedUntilConfirmed(tokens: [String]) async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let sink = try f.declareObserver("upstream", exchange: f.topology.resultsExchange, routingKey: "#")
        let fillers = try await f.refusePublishes(on: sink)
        defer { _ = try? f.allowPublishes(on: sink) }
        let worker = try f.makeWorker()
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("held", tokens: tokens)])

        try await eventually("the results refused twice") { worker.counters.republished.load(ordering: .relaxed) >= 2 * tokens.count }
        for _ in 0..<5 {  // a steady state, observed over a second
            #expect(try f.unackedDeliveries() == 1 && f.messageCount(f.topology.jobsQueue) == 0)
            #expect(try f.messageCount(sink) == fillers, "a result reached the refusing queue")
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(worker.counters.acked.load(ordering: .relaxed) == 0)

        try f.allowPublishes(on: sink)
        try await eventually("the job acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        let results = try f.drain(sink).filter { !f.isFiller($0) }.map { try SendResult.decode(JSONValue.parse($0.body)) }
        #expect(results.map(\.target.value).sorted() == tokens)
        #expect(results.allSatisfy { $0.outcome == .sent && $0.attempts == 1 })
        #expect(tokens.allSatisfy { f.sends(to: $0) == 1 })
    }

    /// A job whose results the broker keeps refusing holds its share of the job admission until
    /// they are confirmed: the job behind it waits unsent (its pushes would only add results that
    /// cannot be published); once the queue takes results again, both jobs settle, each recipient
    /// sent once.
    @Test func aJobAwaitingConfirmsHoldsItsAdmissionSoTheJobBehindWaitsUnsent() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let sink = try f.declareObserver("upstream", exchange: f.topology.resultsExchange, routingKey: "#")
        _ = try await f.refusePublishes(on: sink)
        defer { _ = try? f.allowPublishes(on: sink) }
        let worker = try f.makeWorker(admission: 2)
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("held", tokens: ["dev-h1", "dev-h2"]), jobJSON("behind", tokens: ["dev-b1", "dev-b2"])])

        try await eventually("the first job's results refused twice") { worker.counters.republished.load(ordering: .relaxed) >= 4 }
        for _ in 0..<5 {  // a steady state, observed over a second
            #expect(f.sends(to: "dev-b1") == 0 && f.sends(to: "dev-b2") == 0, "the job behind was sent while the first awaited its confirms")
            #expect(try f.unackedDeliveries() == 2)
            try await Task.sleep(for: .milliseconds(200))
        }

        try f.allowPublishes(on: sink)
        try await eventually("both jobs acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        for token in ["dev-h1", "dev-h2", "dev-b1", "dev-b2"] { #expect(f.sends(to: token) == 1, "\(token)") }
        let results = try f.drain(sink).filter { !f.isFiller($0) }.map { try SendResult.decode(JSONValue.parse($0.body)) }
        #expect(results.map(\.target.value).sorted() == ["dev-b1", "dev-b2", "dev-h1", "dev-h2"])
    }

    /// No queue takes the results (the stream unbound; after a broker restart a stream that is
    /// still starting takes nothing for a moment either): the broker returns them instead of
    /// acking and dropping them, the delivery stays unacked, and once the stream is bound again
    /// each result arrives exactly once, with nothing sent twice.
    @Test(arguments: [["dev-u1"], ["dev-u1", "dev-u2"]])
    func unroutableResultIsPublishedAgainNotDropped(tokens: [String]) async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let admin = try AMQPChannelClient(settings: f.settings)
        defer { admin.close() }
        try admin.unbindQueue(f.topology.resultsStream, exchange: f.topology.resultsExchange, routingKey: "#")
        let worker = try f.makeWorker()
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("unrouted", tokens: tokens)])

        try await eventually("the results returned twice") { worker.counters.republished.load(ordering: .relaxed) >= 2 * tokens.count }
        #expect(try f.unackedDeliveries() == 1, "the delivery must stay unacked while no queue takes its results")
        #expect(worker.counters.acked.load(ordering: .relaxed) == 0)

        try admin.bindQueue(f.topology.resultsStream, exchange: f.topology.resultsExchange, routingKey: "#")
        try await eventually("the job acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        let results = try await f.remainingResults()
        #expect(results.map(\.target.value).sorted() == tokens)
        #expect(tokens.allSatisfy { f.sends(to: $0) == 1 })
    }

    /// Coalesced acks: the job whose dead-letter copy the broker refuses stays unacked (no ack
    /// with `multiple` covers it), while the jobs delivered after it are acked anyway (one stuck
    /// delivery does not hold the prefetch window); lifting the refusal settles it, nothing twice.
    @Test func aRefusedCopyHoldsOnlyItsOwnJobUnackedWhileLaterJobsAreAcked() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let queue = f.topology.deadLetterQueue
        _ = try await f.refusePublishes(on: queue)
        defer { _ = try? f.allowPublishes(on: queue) }
        let worker = try f.makeWorker(maxAttempts: 1, prefetch: 20)
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("stuck", tokens: ["unavailable-dev"])])
        try await eventually("the copy refused") { worker.counters.republished.load(ordering: .relaxed) >= 1 }
        let later = (0..<6).map { "later-\($0)" }
        try await f.publish(later.map { jobJSON($0, tokens: ["dev-\($0)"]) })

        let early = try await f.results(6 + 1)  // the later jobs' results and the stuck job's dead_lettered one
        #expect(Set(early.map(\.jobID)) == Set(later + ["stuck"]))
        try await eventually("the later jobs acked") { try worker.counters.acked.load(ordering: .relaxed) == 6 && f.unackedDeliveries() == 1 }
        for _ in 0..<5 {  // a steady state, observed over a second
            #expect(try f.unackedDeliveries() == 1 && f.messageCount(f.topology.jobsQueue) == 0, "the stuck job must stay unacked")
            try await Task.sleep(for: .milliseconds(200))
        }

        try f.allowPublishes(on: queue)
        try await eventually("the stuck job acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        #expect(worker.counters.acked.load(ordering: .relaxed) == 7)
        #expect(try await f.remainingResults().isEmpty, "no result published twice")
        #expect(later.allSatisfy { f.sends(to: "dev-\($0)") == 1 })
        #expect(f.emulator.stats().count("UNAVAILABLE") == 1)
    }

    /// A confirm that never arrives (the node's memory alarm blocks the publisher): the delivery
    /// stays unacked past a deadline; once the alarm clears, exactly one result.
    @Test func confirmWithheldByAMemoryAlarmKeepsTheDeliveryUnacked() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let worker = try f.makeWorker()
        let (shutdown, task) = f.startWorker(worker)
        try await f.publish([jobJSON("warm", tokens: ["dev-warm"])])  // the worker's publisher has published
        _ = try await f.results(1)
        try await f.publish([jobJSON("alarm", tokens: ["slow8000-dev-alarm"])])
        // The send takes 8 s: the alarm (rabbitmqctl, seconds on a loaded machine) must be on
        // before the result is published, or the broker has nothing to block.
        try await eventually("the slow send started") { f.sends(to: "slow8000-dev-alarm") == 1 }

        try f.broker.memoryAlarm(true)
        defer { _ = try? f.broker.memoryAlarm(false) }
        try await eventually("connection.blocked") { worker.counters.blocked.load(ordering: .relaxed) >= 1 }
        try await eventually("the result submitted") { worker.counters.awaitingConfirm.load(ordering: .relaxed) == 1 }
        for _ in 0..<10 {  // unconfirmed, so unacked, for two seconds
            #expect(try f.unackedDeliveries() == 1 && f.messageCount(f.topology.jobsQueue) == 0)
            #expect(try await f.resultsTap.quiet(for: .milliseconds(200)), "a result reached the stream")
        }
        #expect(worker.counters.acked.load(ordering: .relaxed) == 1)

        try f.broker.memoryAlarm(false)
        let results = try await f.results(1)
        try await eventually("the job acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        #expect(results.map(\.target.value) == ["slow8000-dev-alarm"])
        #expect(try await f.remainingResults().isEmpty)
        #expect(f.sends(to: "slow8000-dev-alarm") == 1)
    }

    /// `--max-job-bytes` (default 1 MiB): a larger body is dead-lettered unparsed, and never held
    /// whole: the dead letter keeps its first 64 KiB and says how large it was (second audit,
    /// finding 10).
    @Test func jobBodyOverTheSizeLimitIsDeadLetteredUnparsedWithItsStartKept() async throws {
        let f = try await PipelineFixture()
        let (shutdown, task) = f.startWorker(try f.makeWorker())
        let padding = String(repeating: "x", count: 1 << 20)
        let body = Data(jobJSON("huge", tokens: ["dev-huge"], extra: #","data":{"pad":"\#(padding)"}"#).utf8)
        try await f.publishBytes(body)
        let dead = try await f.take(1, from: f.topology.deadLetterQueue)
        shutdown.trigger()
        await task.value
        // Compared as a Bool: a failed `==` of two Data values makes Swift Testing diff them (minutes for 1 MiB).
        let keptIsTheStart = dead[0].body == body.prefix(65_536)
        #expect(dead[0].body.count == 65_536)
        #expect(keptIsTheStart)
        #expect(dead[0].properties.headers[DeadLetterHeader.code]?.stringValue == "INVALID_JOB")
        #expect(dead[0].properties.headers[DeadLetterHeader.truncatedFrom] == .int(Int64(body.count)))
        #expect(dead[0].properties.headers[DeadLetterHeader.message]?.stringValue
                == "the job body is \(body.count) bytes, over the limit of 1048576 bytes (--max-job-bytes); not parsed; only its first 65536 bytes are kept")
        #expect(f.emulator.recordedMessages().isEmpty)
    }
}
