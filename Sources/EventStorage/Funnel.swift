import PushCore

/// Which sends a funnel covers.
public enum FunnelScope: Sendable, Equatable {
    case all
    case job(String)
    case campaign(String)
    case app(String)
}

/// The funnel of a set of sends: what happened to the messages, then what users did with them.
/// Event counts are distinct messages (a message opened twice counts once in `opened`).
public struct Funnel: Sendable, Equatable {
    /// Recipients (targets) with a result stored: each counts once, under its latest outcome.
    public var recipients = 0
    public var sent = 0
    public var validated = 0
    public var invalidTokens = 0
    public var rejected = 0
    public var expired = 0
    /// Recipients whose latest outcome is `dead_lettered` (their job is in the jobs DLQ; a
    /// replay that sends them moves them to `sent`).
    public var deadLettered = 0
    /// Recipients whose latest outcome is `cancelled` (`push-connector cancel`).
    public var cancelled = 0
    public var received = 0
    public var opened = 0
    public var clicked = 0
    public var dismissed = 0
    /// Event rows linked to these sends (every distinct event, not distinct messages).
    public var events = 0
    /// Events whose send is not (yet) known; only counted for scope `.all`.
    public var unlinkedEvents = 0

    public init() {}

    /// Adds the events of one `event_type` row of the funnel query: `distinct` messages, `rows`
    /// events.
    mutating func add(eventType: String?, distinct: Int, rows: Int) {
        events += rows
        switch eventType {
        case "receive": received = distinct
        case "open": opened = distinct
        case "click": clicked = distinct
        case "dismiss": dismissed = distinct
        default: break
        }
    }

    /// `part / sent`, nil when nothing was sent.
    public func rate(_ part: Int) -> Double? { sent == 0 ? nil : Double(part) / Double(sent) }

    /// The funnel as JSON.
    public func json(scope: FunnelScope) -> JSONValue {
        func rate(_ part: Int) -> JSONValue { self.rate(part).map { .double(($0 * 10_000).rounded() / 10_000) } ?? .null }
        var scopeJSON: JSONValue = .string("all")
        switch scope {
        case .all: break
        case .job(let j): scopeJSON = .object(["job_id": .string(j)])
        case .campaign(let c): scopeJSON = .object(["campaign": .string(c)])
        case .app(let a): scopeJSON = .object(["app_id": .string(a)])
        }
        return .object([
            "scope": scopeJSON,
            "recipients": .int(Int64(recipients)), "sent": .int(Int64(sent)), "validated": .int(Int64(validated)),
            "invalid_tokens": .int(Int64(invalidTokens)), "rejected": .int(Int64(rejected)), "expired": .int(Int64(expired)),
            "dead_lettered": .int(Int64(deadLettered)), "cancelled": .int(Int64(cancelled)),
            "received": .int(Int64(received)), "opened": .int(Int64(opened)), "clicked": .int(Int64(clicked)),
            "dismissed": .int(Int64(dismissed)), "events": .int(Int64(events)), "unlinked_events": .int(Int64(unlinkedEvents)),
            "rates": .object(["delivered": recipients == 0 ? .null : .double((Double(sent) / Double(recipients) * 10_000).rounded() / 10_000),
                              "received": rate(received), "opened": rate(opened), "clicked": rate(clicked), "dismissed": rate(dismissed)]),
        ])
    }

    /// Human-readable lines for `push-connector stats`.
    public func text(scope: FunnelScope) -> String {
        func pct(_ part: Int) -> String {
            guard let r = rate(part) else { return "" }
            return String(printf: "  (%.1f %% of sent)", r * 100)
        }
        var lines: [String] = []
        switch scope {
        case .all: lines.append("scope            all")
        case .job(let j): lines.append("scope            job_id \(j)")
        case .campaign(let c): lines.append("scope            campaign \(c)")
        case .app(let a): lines.append("scope            app_id \(a)")
        }
        lines += [
            "recipients       \(recipients)",
            "sent             \(sent)",
            "validated        \(validated)",
            "invalid tokens   \(invalidTokens)",
            "rejected         \(rejected)",
            "expired          \(expired)",
            "dead-lettered    \(deadLettered)",
            "cancelled        \(cancelled)",
            "received         \(received)" + pct(received),
            "opened           \(opened)" + pct(opened),
            "clicked          \(clicked)" + pct(clicked),
            "dismissed        \(dismissed)" + pct(dismissed),
            "events           \(events)",
        ]
        if scope == .all { lines.append("unlinked events  \(unlinkedEvents)  (no send result of their App ID stored for their mn_message_id yet)") }
        return lines.joined(separator: "\n")
    }
}
