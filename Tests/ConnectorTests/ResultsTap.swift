import AMQP
import Foundation
import PushCore
@testable import Connector

/// A test's reader of the results stream: reads from `first` and hands out each result once, in
/// stream order, across calls. Its connection may be cut by the test (broker restarts, closed
/// connections): it reconnects from the offset after the last one it handed out.
actor ResultsTap {
    private let settings: AMQPSettings
    private let stream: String
    private var reader: StreamReader?
    /// The offset to read next.
    private(set) var nextOffset: Int64 = 0

    init(settings: AMQPSettings, stream: String) {
        self.settings = settings
        self.stream = stream
    }

    /// The next result, or nil when none arrived by `deadline`. Connection failures are retried
    /// until the deadline.
    func next(by deadline: ContinuousClock.Instant) async throws -> Delivery? {
        while true {
            do {
                if reader == nil {
                    reader = try await StreamReader(settings: settings, stream: stream, from: nextOffset == 0 ? .first : .offset(nextOffset))
                }
                let remaining = deadline - ContinuousClock.now
                guard remaining > .zero, let delivery = try await reader!.next(within: remaining) else { return nil }
                guard let offset = delivery.streamOffset else { throw FixtureError("a delivery of \(stream) without x-stream-offset") }
                if offset < nextOffset { continue }  // re-read after a reconnect
                nextOffset = offset + 1
                return delivery
            } catch let error as FixtureError {
                throw error
            } catch {
                await reader?.close()
                reader = nil
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// `count` more results, failing after `timeout`.
    func take(_ count: Int, timeout: Duration) async throws -> [Delivery] {
        let deadline = ContinuousClock.now + timeout
        var taken: [Delivery] = []
        while taken.count < count {
            guard let d = try await next(by: deadline) else {
                throw FixtureError("only \(taken.count) of \(count) results arrived on \(stream) within \(timeout)")
            }
            if !Self.isMarker(d) { taken.append(d) }
        }
        return taken
    }

    /// Every result not handed out yet that the stream holds now. The stream does not tell its
    /// length over AMQP 0-9-1 (queue.declare-ok counts 0), so a marker is appended (confirmed)
    /// straight to the stream: whatever was confirmed before is ahead of it.
    func rest(timeout: Duration = .seconds(30)) async throws -> [Delivery] {
        let marker = UUID().uuidString
        let client = try AMQPChannelClient(settings: settings)
        defer { client.close() }
        try client.publishConfirmed(exchange: "", routingKey: stream, body: Data(marker.utf8),
                                    properties: MessageProperties(headers: [Self.markerHeader: .string(marker)]))
        let deadline = ContinuousClock.now + timeout
        var taken: [Delivery] = []
        while true {
            guard let d = try await next(by: deadline) else { throw FixtureError("the marker never came back from \(stream)") }
            if d.properties.headers[Self.markerHeader]?.stringValue == marker { return taken }
            if !Self.isMarker(d) { taken.append(d) }
        }
    }

    /// True when no new result arrives within `duration` (a marker does not count).
    func quiet(for duration: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + duration
        while let d = try await next(by: deadline) {
            if !Self.isMarker(d) { return false }
        }
        return true
    }

    static let markerHeader = "x-test-marker"
    static func isMarker(_ d: Delivery) -> Bool { d.properties.headers[markerHeader] != nil }

    func close() async {
        await reader?.close()
        reader = nil
    }
}
