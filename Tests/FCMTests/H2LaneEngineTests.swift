import BrokerHarness
import EmulatorKit
import Foundation
import OSThread
import Synchronization
import Testing
@testable import FCM

/// Requests started on a thread with a `PollLoop` (a lane's consumer thread) are sent by an
/// engine of that thread's own and answered on it, with no hand-off (decision 0085); the
/// thread's end waits for their answers; the transport's shutdown ends them too.
@Suite(.serialized, .timeLimit(.minutes(2))) struct H2LaneEngineTests {
    /// What a loop thread saw of its requests.
    struct Report: Sendable {
        var statuses: [Int] = []
        var errors: [TransportError.Kind] = []
        var answeredOnTheLoopThread = true
        var handoffs = 0
    }

    @Test(arguments: [false, true])
    func aRequestStartedOnALoopThreadIsSentAndAnsweredThereWithoutAHandoff(tls: Bool) async throws {
        let fixture = try H2TransportTests.Fixture(tls: tls)
        defer { fixture.stop() }
        let requests = 60
        let (report, opened) = await onLoopThread { loop in
            let before = ThreadHandoffs.count
            let report = Self.run(requests, on: loop, fixture: fixture)
            return (Report(statuses: report.statuses, errors: report.errors, answeredOnTheLoopThread: report.answeredOnTheLoopThread,
                           handoffs: ThreadHandoffs.count - before), fixture.transport.connectionsOpened)
        }
        #expect(report.statuses == Array(repeating: 200, count: requests) && report.errors.isEmpty, "\(report.errors)")
        #expect(report.answeredOnTheLoopThread)
        // Through the transport's own thread, each request would cost one (the inbox) or more.
        #expect(report.handoffs < 5, "hand-offs for \(requests) requests: \(report.handoffs)")
        #expect(opened >= 1, "the loop thread's engine opened its own connection")
    }

    @Test func aRequestStartedInAnAnswerOnTheTransportsOwnThreadGoesToItsEngine() async throws {
        let fixture = try H2TransportTests.Fixture()
        defer { fixture.stop() }
        let transport = fixture.transport
        let url = fixture.sendURL
        let (first, second, status) = await withCheckedContinuation { (done: CheckedContinuation<(UInt, UInt, Int), Never>) in
            // Started in a task: the transport's own thread sends it and calls back there.
            transport.start(H2TransportTests.request(url: url, token: "own-1")) { _ in
                let firstThread = UInt(pthread_self())
                transport.start(H2TransportTests.request(url: url, token: "own-2")) { answer in
                    done.resume(returning: (firstThread, UInt(pthread_self()), (try? answer.get().status) ?? -1))
                }
            }
        }
        #expect(status == 200 && first == second, "the second request is answered on the first one's thread")
        #expect(transport.connectionsOpened == 1, "one engine, one connection: \(transport.connectionsOpened) opened")
    }

    @Test func aLoopThreadThatEndsWaitsForTheAnswersOfItsRequests() async throws {
        let fixture = try H2TransportTests.Fixture(configure: { $0.latency = .fixed(.milliseconds(300)) })
        defer { fixture.stop() }
        let answers = await onLoopThread { loop -> [Int] in
            let collected = Mutex<[Int]>([])
            for index in 0..<5 {
                fixture.transport.start(H2TransportTests.request(url: fixture.sendURL, token: "end-\(index)")) { answer in
                    collected.withLock { $0.append((try? answer.get().status) ?? -1) }
                }
            }
            loop.end(within: 30_000_000_000)  // what a consumer thread does when its consumer ended
            return collected.withLock { $0 }
        }
        #expect(answers == [200, 200, 200, 200, 200], "answered, not failed by the thread's end: \(answers)")
    }

    @Test func shutdownFailsTheRequestsOfLoopThreadsAndRefusesNewOnes() async throws {
        let fixture = try H2TransportTests.Fixture(configure: { $0.latency = .fixed(.seconds(20)) })
        defer { fixture.harness.stop() }
        let transport = fixture.transport
        let started = Flag()
        async let report = onLoopThread { loop -> Report in
            var report = Report()
            let box = Mutex<[Result<HTTPResponse, TransportError>]>([])
            for index in 0..<3 {
                transport.start(H2TransportTests.request(url: fixture.sendURL, token: "down-\(index)")) { answer in
                    box.withLock { $0.append(answer) }
                }
            }
            started.value.store(true, ordering: .relaxed)
            _ = loop.turn(until: { box.withLock({ $0.count }) >= 3 }, seconds: 15)
            transport.start(H2TransportTests.request(url: fixture.sendURL, token: "after")) { answer in
                box.withLock { $0.append(answer) }
            }
            for answer in box.withLock({ $0 }) {
                if case .failure(let error) = answer { report.errors.append(error.kind) } else { report.statuses.append(200) }
            }
            loop.end(within: 0)
            return report
        }
        async let stopper: Void = {
            while !started.value.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(10)) }
            try? await Task.sleep(for: .milliseconds(300))
            transport.shutdown()
        }()
        await stopper
        let outcome = await report
        #expect(outcome.errors == [.shutdown, .shutdown, .shutdown, .shutdown] && outcome.statuses.isEmpty,
                "three in flight failed by the shutdown (not after the emulator's 20 s), the one after refused: \(outcome.errors)")
    }

    /// A flag the loop thread raises for the test's task.
    final class Flag: Sendable { let value = Atomic<Bool>(false) }

    /// Starts `count` requests on the loop's thread and turns it until every one is answered.
    private static func run(_ count: Int, on loop: PollLoop, fixture: H2TransportTests.Fixture) -> Report {
        let thread = pthread_self()
        let box = Mutex(Report())
        for index in 0..<count {
            fixture.transport.start(H2TransportTests.request(url: fixture.sendURL, token: "lane-\(index)")) { answer in
                let here = pthread_equal(pthread_self(), thread) != 0
                box.withLock { report in
                    report.answeredOnTheLoopThread = report.answeredOnTheLoopThread && here
                    switch answer {
                    case .success(let response): report.statuses.append(response.status)
                    case .failure(let error): report.errors.append(error.kind)
                    }
                }
            }
        }
        _ = loop.turn(until: { box.withLock({ $0.statuses.count + $0.errors.count }) >= count }, seconds: 60)
        loop.end(within: 0)
        return box.withLock { $0 }
    }
}
