/// A result's contract JSON written straight to bytes: the same bytes as
/// `encoded().encodedBytes()` (compact, keys sorted), without building a `JSONValue` tree, its
/// dictionaries and the sorted key list for every result the worker publishes.
extension SendResult {
    /// The result as compact contract JSON, keys in sorted order.
    public func encodedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(320)
        // Keys in the order `JSONValue` writes them (sorted): app_id, attempts, campaign,
        // completed_at, error, fcm_message_name, job_id, mn_message_id, outcome,
        // possibly_delivered, possibly_duplicate (each when true), replays, schema_version, target.
        out.append(contentsOf: #"{"app_id":"#.utf8)
        JSONValue.writeString(appID, to: &out)
        out.append(contentsOf: #","attempts":"#.utf8)
        Self.writeInt(attempts, to: &out)
        if let campaign {
            out.append(contentsOf: #","campaign":"#.utf8)
            JSONValue.writeString(campaign, to: &out)
        }
        out.append(contentsOf: #","completed_at":""#.utf8)
        completedAt.writeRFC3339(to: &out)
        out.append(UInt8(ascii: "\""))
        if let error {
            out.append(contentsOf: #","error":{"code":"#.utf8)
            JSONValue.writeString(error.code, to: &out)
            if let status = error.httpStatus {
                out.append(contentsOf: #","http_status":"#.utf8)
                Self.writeInt(status, to: &out)
            }
            out.append(contentsOf: #","message":"#.utf8)
            JSONValue.writeString(error.message, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        if let fcmMessageName {
            out.append(contentsOf: #","fcm_message_name":"#.utf8)
            JSONValue.writeString(fcmMessageName, to: &out)
        }
        out.append(contentsOf: #","job_id":"#.utf8)
        JSONValue.writeString(jobID, to: &out)
        out.append(contentsOf: #","mn_message_id":"#.utf8)
        JSONValue.writeString(mnMessageID, to: &out)
        out.append(contentsOf: #","outcome":""#.utf8)
        out.append(contentsOf: outcome.rawValue.utf8)  // fixed lower-case names: nothing to escape
        out.append(UInt8(ascii: "\""))
        if possiblyDelivered { out.append(contentsOf: #","possibly_delivered":true"#.utf8) }
        if possiblyDuplicate { out.append(contentsOf: #","possibly_duplicate":true"#.utf8) }
        out.append(contentsOf: #","replays":"#.utf8)
        Self.writeInt(replays, to: &out)
        out.append(contentsOf: #","schema_version":"#.utf8)
        Self.writeInt(Self.schemaVersion, to: &out)
        out.append(contentsOf: #","target":{"#.utf8)
        JSONValue.writeString(target.kind, to: &out)
        out.append(UInt8(ascii: ":"))
        JSONValue.writeString(target.value, to: &out)
        out.append(contentsOf: "}}".utf8)
        return out
    }

    private static func writeInt(_ value: Int, to out: inout [UInt8]) {
        if value >= 0 && value < 10 {
            out.append(UInt8(ascii: "0") + UInt8(value))
        } else {
            out.append(contentsOf: String(value).utf8)
        }
    }
}
