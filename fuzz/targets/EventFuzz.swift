// Reader "event": any bytes as a `POST /event` body (one event) or `/events` body
// (`{"events": [...]}`) give events or a ContractError; an event read round-trips through its
// contract encoding (what is queued on push.events), where `occurred_at` has whole seconds.

func fuzzEvent(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let value = try? JSONValue.parse(bytes) else { return }
    var candidates = [value]
    if case .array(let list)? = value["events"] { candidates += list }
    for candidate in candidates {
        guard let event = try? PushEvent.decode(candidate) else { continue }
        precondition(MessageID.isWellFormed(event.mnMessageID), "an event with a malformed mn_message_id was accepted")
        guard let again = try? PushEvent.decode(event.encoded()) else { preconditionFailure("an accepted event's encoding is refused") }
        precondition(again.eventType == event.eventType && again.mnMessageID == event.mnMessageID && again.appID == event.appID
                     && again.eventID == event.eventID && again.occurredAt?.description == event.occurredAt?.description,
                     "event round trip changed the event")
    }
}
