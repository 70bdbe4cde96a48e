import AMQP
import BrokerHarness
import Foundation
import PushCore
import Testing
@testable import Connector

/// The worker across broker outages and shutdowns: connections cut, the broker app or the whole
/// node restarted mid-run, SIGTERM while the broker blocks publishing, a shutdown deadline that
/// expires with sends in flight. Nothing is lost; a send repeats only for deliveries in flight.
@Suite(.serialized, .timeLimit(.minutes(4))) struct WorkerOutageTests {
    @Test func brokerAppRestartedMidRunLosesNothing() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        try await runThroughACut(f) {
            try f.broker.rabbitmqctl(["stop_app"])
            try f.broker.rabbitmqctl(["start_app"])
        }
    }

    @Test func brokerNodeRestartedMidRunLosesNothing() async throws {
        let broker = try await TestBroker.dedicated()
        do {
            let f = try await PipelineFixture(broker: broker)
            try await runThroughACut(f) { try await broker.restartNode() }
        } catch {
            try await broker.stopNode()
            throw error
        }
        try await broker.stopNode()
    }

    /// Each consumer session that took a delivery builds a lane that holds its consumer; a closed
    /// session must let go of both, or every reconnect keeps a consumer and its wake-up fd. Eight
    /// cuts, each after jobs went through: the process's open descriptors stay where they were.
    @Test func reconnectsKeepNoDescriptorOfAClosedSession() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let worker = try f.makeWorker(prefetch: 10)
        let (shutdown, task) = f.startWorker(worker)
        let cuts = 8
        var descriptors: [Int] = []
        for round in 0...cuts {
            try await f.publish((0..<5).map { jobJSON("leak-\(round)-\($0)", tokens: ["dev-leak-\(round)-\($0)"]) })
            _ = try await f.collectResults(covering: 5)
            try await eventually("round \(round) acked") { try f.jobsSettled() }
            descriptors.append(OpenDescriptors.count)
            guard round < cuts else { break }
            try f.broker.closeAllConnections(vhost: f.settings.vhost, reason: "leak test cut \(round)")
            // The consumer's own count: `counters.reconnects` also counts the publisher's.
            try await eventually("consumer reconnect \(round + 1)") { worker.metrics.consumerReconnects.value >= round + 1 }
        }
        shutdown.trigger()
        await task.value
        #expect(worker.metrics.consumerReconnects.value >= cuts)
        // One leaked session costs at least its wake-up fd: eight cuts would add eight or more.
        #expect(descriptors.last! - descriptors.first! <= 3, "open descriptors after each cut: \(descriptors)")
    }

    /// SIGTERM while a memory alarm blocks publishing: the process exits 0 (close does not hang)
    /// and after the alarm every job completes. RabbitMQ blocks a connection when it publishes
    /// during the alarm, so the job in flight (whose result revealed the alarm) was sent and may be
    /// sent again; the jobs behind it are sent once.
    @Test func sigtermWhileTheBrokerBlocksPublishingExitsZeroAndLosesNothing() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let tokens = (0..<3).map { "dev-behind-\($0)" }
        try await f.publish([jobJSON("reveal", tokens: ["slow3000-dev-reveal"])]
                            + tokens.enumerated().map { jobJSON("behind-\($0.offset)", tokens: [$0.element]) })
        let worker = try WorkerProcess(f, ["--lanes", "1", "--prefetch", "1", "--shutdown-deadline", "2", "--log-level", "info"])
        try await eventually("the slow send started") { f.sends(to: "slow3000-dev-reveal") == 1 }
        try f.broker.memoryAlarm(true)
        defer { _ = try? f.broker.memoryAlarm(false) }
        try await eventually("the worker blocked") { worker.log.contains("the broker blocked publishing") }
        #expect(tokens.allSatisfy { f.sends(to: $0) == 0 })
        #expect(try await f.resultsTap.quiet(for: .milliseconds(200)), "no result while publishing is blocked")

        let status = try await worker.terminate(within: .seconds(30))
        #expect(status == 0, "exit status \(String(describing: status)); log:\n\(worker.log)")
        try f.broker.memoryAlarm(false)
        try await eventually("the jobs back in the queue") { try f.messageCount(f.topology.jobsQueue) == tokens.count + 1 }

        let (shutdown, task) = f.startWorker(try f.makeWorker())
        let results = try await f.collectResults(covering: tokens.count + 1)
        try await eventually("every job acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        #expect(Set(results.map(\.target.value)) == Set(tokens + ["slow3000-dev-reveal"]) && results.count == tokens.count + 1)
        #expect(tokens.allSatisfy { f.sends(to: $0) == 1 })
        #expect((1...2).contains(f.sends(to: "slow3000-dev-reveal")))
    }

    /// Sends slower than the shutdown deadline: SIGTERM → exit 0; what was in flight stays
    /// unacked and is redelivered; a second worker completes every job.
    @Test func shutdownDeadlineExpiringLeavesInFlightUnackedAndExitsZero() async throws {
        let f = try await PipelineFixture(ownVhost: true)
        let tokens = (0..<6).map { "slow4000-dev-\($0)" }
        try await f.publish(tokens.enumerated().map { jobJSON("deadline-\($0.offset)", tokens: [$0.element]) })
        let worker = try WorkerProcess(f, ["--lanes", "1", "--prefetch", "3", "--shutdown-deadline", "1", "--log-level", "warn"])
        try await eventually("three sends in flight") { f.emulator.recordedMessages().count == 3 }

        let status = try await worker.terminate(within: .seconds(30))
        #expect(status == 0, "exit status \(String(describing: status)); log:\n\(worker.log)")
        #expect(worker.log.contains("deadline reached with deliveries in flight"))
        try await eventually("every job back in the queue") {
            try f.messageCount(f.topology.jobsQueue) == tokens.count && f.unackedDeliveries() == 0
        }
        #expect(try await f.remainingResults().isEmpty)

        let (shutdown, task) = f.startWorker(try f.makeWorker(prefetch: 10))
        let results = try await f.collectResults(covering: tokens.count)
        try await eventually("every job acked") { try f.jobsSettled() }
        shutdown.trigger()
        await task.value
        #expect(results.count == tokens.count, "one result per job")
        #expect(results.allSatisfy { $0.outcome == .sent })
        // Only the three in flight at the deadline (the prefetch window) were sent again.
        #expect(tokens.map { f.sends(to: $0) }.reduce(0, +) == tokens.count + 3)
        #expect(tokens.allSatisfy { (1...2).contains(f.sends(to: $0)) })
    }
}

/// Runs 200 slow jobs through one worker (prefetch 20), applies `cut` mid-run, and checks that
/// the cut landed mid-run, the worker reconnected and every job ended with one result (plus
/// duplicates bounded by the prefetch window).
func runThroughACut(_ f: PipelineFixture, cut: () async throws -> Void) async throws {
    let total = 200, prefetch = 20
    // Answers of 500 ms are slow to the project gate (decision 0094), which would send part of
    // each window round the retry tiers: these tests pin the broker cut, so the gate stays open.
    let worker = try f.makeWorker(prefetch: UInt16(prefetch)) { $0.promptAnswer = .seconds(5) }
    let (shutdown, task) = f.startWorker(worker)
    try await f.publish((0..<total).map { jobJSON("cut-\($0)", tokens: ["slow500-dev-\($0)"]) })
    try await eventually("40 results") { worker.counters.results.load(ordering: .relaxed) >= 40 }
    try await cut()
    let resultsBeforeCut = worker.counters.results.load(ordering: .relaxed)
    #expect(resultsBeforeCut < total, "the cut came after the run: the test proved nothing")

    let results = try await f.collectResults(covering: total)
    try await eventually("every job acked") { try f.jobsSettled() }
    shutdown.trigger()
    await task.value
    let all = results + (try await f.remainingResults())
    #expect(worker.counters.reconnects.load(ordering: .relaxed) >= 1)
    #expect(Set(all.map(\.jobID)).count == total)
    #expect(all.count - total <= prefetch, "duplicates beyond the prefetch window: \(all.count - total)")
    #expect(all.allSatisfy { $0.outcome == .sent })
    #expect(try f.messageCount(f.topology.deadLetterQueue) == 0)
    let sends = (0..<total).map { f.sends(to: "slow500-dev-\($0)") }
    #expect(sends.allSatisfy { $0 >= 1 })
    #expect(sends.reduce(0, +) - total <= prefetch, "sends repeated beyond the in-flight window")
}
