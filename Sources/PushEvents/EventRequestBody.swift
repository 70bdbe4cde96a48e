import PushCore

/// A `POST /event` or `POST /events` body, read and validated. Pure.
///
/// `/event` is one event: any problem refuses it. `/events` (`{"events": [...]}`, 1 …
/// `maxBatch`) keeps the good events of a batch and reports each bad one by its index, so that
/// one bad event in an offline batch does not make the app resend the batch for ever; only a
/// body that is not a batch at all (not JSON, no `events` array, too many) is refused whole.
struct EventRequestBody: Sendable {
    /// The valid events, in order.
    var events: [PushEvent]
    /// The refused events of a batch: their index and what is wrong.
    var rejected: [(index: Int, issues: [ContractIssue])]

    /// Reads `body`; `knownApps` (from `--config`, nil: any) refuses other App IDs (`UNKNOWN_APP`).
    static func read(_ body: [UInt8], batch: Bool, knownApps: Set<String>?) -> Result<EventRequestBody, ContractError> {
        let json: JSONValue
        do {
            json = try JSONValue.parse(body, maxDepth: 8)
        } catch {
            return .failure(ContractError(document: "event", issues: [ContractIssue(.notJSON, field: "$", error.description)]))
        }
        guard batch else {
            return read(json, path: "", knownApps: knownApps)
                .map { EventRequestBody(events: [$0], rejected: []) }
                .mapError { ContractError(document: "event", issues: $0.issues) }
        }
        guard let array = json["events"]?.arrayValue else {
            return .failure(ContractError(document: "events", issues: [ContractIssue(.missingField, field: "events", "must be an array of events")]))
        }
        guard (1...EventIngestion.maxBatch).contains(array.count) else {
            return .failure(ContractError(document: "events", issues: [
                ContractIssue(.invalidValue, field: "events", "must hold 1 to \(EventIngestion.maxBatch) events, got \(array.count)"),
            ]))
        }
        var decoded = EventRequestBody(events: [], rejected: [])
        for (index, value) in array.enumerated() {
            switch read(value, path: "events[\(index)]", knownApps: knownApps) {
            case .success(let event): decoded.events.append(event)
            case .failure(let issues): decoded.rejected.append((index, issues.issues))
            }
        }
        return .success(decoded)
    }

    /// Every issue of every refused event, in order.
    var issues: [ContractIssue] { rejected.flatMap(\.issues) }

    private struct Issues: Error { let issues: [ContractIssue] }

    private static func read(_ value: JSONValue, path: String, knownApps: Set<String>?) -> Result<PushEvent, Issues> {
        let event: PushEvent
        do {
            event = try PushEvent.decode(value, path: path)
        } catch {
            return .failure(Issues(issues: error.issues))
        }
        if let knownApps, let app = event.appID, !knownApps.contains(app) {
            return .failure(Issues(issues: [ContractIssue(IssueCode(rawValue: "UNKNOWN_APP"), field: path.isEmpty ? "app_id" : "\(path).app_id",
                                                          "no App ID \"\(app)\" in the configuration")]))
        }
        return .success(event)
    }
}
