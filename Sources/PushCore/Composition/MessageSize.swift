/// The size of a recipient's encoded message, computed from what the recipient adds to the job's
/// shared part (its target, its own `data`, its `mn_message_id`) without writing the message:
/// the shared part's bytes and each shared `data` pair's bytes are counted once per job.
///
/// The message is the shared skeleton (every member, `"data":{}` and the target with an empty
/// value) plus the target's value, the `data` pairs (`"key":"value"`, a shared one unless the
/// recipient or the `mn_message_id` replaces it) and the commas between them, exactly as
/// `PreparedJob` writes it (checked against the written bytes by PreparedJobTests).
struct MessageSize: Sendable {
    private let skeletonBytes: Int
    private let sharedPairBytes: [String: Int]
    private let sharedTotal: Int

    init(shared data: [String: String], skeleton: [UInt8]) {
        skeletonBytes = skeleton.count
        var pairs: [String: Int] = [:]
        pairs.reserveCapacity(data.count)
        var scratch: [UInt8] = []
        for (key, value) in data { pairs[key] = Self.pairBytes(key, value, scratch: &scratch) }
        sharedPairBytes = pairs
        sharedTotal = pairs.values.reduce(0, +)
    }

    /// The encoded message's byte count for a recipient with `target` value, its own data and id.
    func count(target: String, own: [String: String], mnMessageID: String) -> Int {
        var total = sharedTotal, pairs = sharedPairBytes.count
        var scratch: [UInt8] = []  // one buffer for every string this recipient adds
        scratch.reserveCapacity(256)
        func replace(_ key: String, _ value: String) {
            if let shared = sharedPairBytes[key] { total -= shared } else { pairs += 1 }
            total += Self.pairBytes(key, value, scratch: &scratch)
        }
        // The id is written last over whatever the shared or own data had under its key.
        for (key, value) in own where key != "mn_message_id" { replace(key, value) }
        replace("mn_message_id", mnMessageID)
        return skeletonBytes + Self.stringBytes(target, scratch: &scratch) - 2 + total + max(0, pairs - 1)
    }

    /// `"key":"value"` as the JSON writer writes it.
    private static func pairBytes(_ key: String, _ value: String, scratch: inout [UInt8]) -> Int {
        stringBytes(key, scratch: &scratch) + 1 + stringBytes(value, scratch: &scratch)
    }

    /// A string with its quotes and escapes, as the JSON writer writes it (into `scratch`, reused).
    private static func stringBytes(_ text: String, scratch: inout [UInt8]) -> Int {
        scratch.removeAll(keepingCapacity: true)
        JSONValue.writeString(text, to: &scratch)
        return scratch.count
    }
}
