import Synchronization

/// A message the emulator accepted, as recorded for inspection.
public struct RecordedMessage: Sendable, Equatable {
    public let project: String
    /// The name FCM answered (`projects/{p}/messages/{id}`).
    public let name: String
    public let token: String?
    public let topic: String?
    public let condition: String?
    /// The compact JSON text of the `message` object as received.
    public let messageJSON: String
    /// When the request arrived: milliseconds since 1970 (latency measurements from outside).
    public var receivedAtMillis: Int64 = 0
}

/// Counts of send outcomes per project: `sent`, `validated`, or an FCM error code
/// (`UNREGISTERED`, `INVALID_ARGUMENT`, `QUOTA_EXCEEDED`, `UNAUTHENTICATED`, …). Totals since start.
public struct EmulatorStats: Sendable, Equatable {
    public var byProject: [String: [String: Int]] = [:]
    /// Access tokens issued and assertions refused by `/token`.
    public var tokensIssued = 0
    public var tokensRefused = 0
    /// Token requests answered with a fault set by `FCMEmulator.setTokenEndpointFault`.
    public var tokenFaultsServed = 0
    /// Client connections accepted (TCP; TLS handshakes included whether they succeed or not).
    public var connectionsAccepted = 0

    /// The count of `outcome` in `project`, or across all projects when `project` is nil.
    public func count(_ outcome: String, project: String? = nil) -> Int {
        if let project { return byProject[project]?[outcome] ?? 0 }
        return byProject.values.reduce(0) { $0 + ($1[outcome] ?? 0) }
    }

    var json: String {
        func counts(_ c: [String: Int]) -> String {
            "{" + c.sorted(by: { $0.key < $1.key }).map { "\(JSONValue.quoted($0.key)):\($0.value)" }.joined(separator: ",") + "}"
        }
        var totals: [String: Int] = [:]
        for c in byProject.values { for (k, v) in c { totals[k, default: 0] += v } }
        let projects = byProject.sorted(by: { $0.key < $1.key }).map { "\(JSONValue.quoted($0.key)):\(counts($0.value))" }
        return "{\"projects\":{\(projects.joined(separator: ","))},\"totals\":\(counts(totals)),\"tokens_issued\":\(tokensIssued),\"tokens_refused\":\(tokensRefused),\"connections_accepted\":\(connectionsAccepted)}"
    }
}

/// The bounded ring of accepted messages plus the outcome counters; safe from any thread.
final class RecordStore: Sendable {
    private struct State {
        var ring: [RecordedMessage] = []
        var next = 0
        var stats = EmulatorStats()
    }
    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(0, capacity) }

    func record(_ message: RecordedMessage) {
        state.withLock { s in
            s.stats.byProject[message.project, default: [:]]["sent", default: 0] += 1
            guard capacity > 0 else { return }
            if s.ring.count < capacity { s.ring.append(message) } else {
                s.ring[s.next] = message
                s.next = (s.next + 1) % capacity
            }
        }
    }

    func count(project: String, outcome: String) {
        state.withLock { $0.stats.byProject[project, default: [:]][outcome, default: 0] += 1 }
    }

    func countTokenFault() { state.withLock { $0.stats.tokenFaultsServed += 1 } }

    func countConnection() { state.withLock { $0.stats.connectionsAccepted += 1 } }

    func countToken(issued: Bool) {
        state.withLock { if issued { $0.stats.tokensIssued += 1 } else { $0.stats.tokensRefused += 1 } }
    }

    /// Recorded messages, oldest first.
    func messages() -> [RecordedMessage] {
        state.withLock { s in Array(s.ring[s.next...] + s.ring[..<s.next]) }
    }

    func clear() { state.withLock { $0.ring = []; $0.next = 0 } }

    func stats() -> EmulatorStats { state.withLock { $0.stats } }
}
