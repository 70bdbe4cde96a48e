/// The tracking id `mn_message_id` that links app events back to the notification.
///
/// Shape: `mnid2m.` followed by five dot-separated decimal groups, e.g. `mnid2m.1234.12.12.1.2`.
public enum MessageID {
    static let prefix = "mnid2m."

    /// True for `mnid2m.N.N.N.N.N` with 1…20 digits per group.
    public static func isWellFormed(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard utf8.count <= 128, id.hasPrefix(prefix) else { return false }
        var groups = 0
        var digits = 0
        for byte in utf8.dropFirst(prefix.utf8.count) {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                groups += 1
                digits = 0
            } else if (48...57).contains(byte) {
                digits += 1
                if digits > 20 { return false }
            } else {
                return false
            }
        }
        return digits > 0 && groups == 4
    }

    /// A deterministic id for recipient `index` of job `jobID`: the same input always yields the
    /// same id (retries and redeliveries keep it), different recipients get different ids.
    ///
    /// Four groups come from a 128-bit FNV-1a digest of the job id (two 64-bit hashes with
    /// different offsets), the fifth is the recipient's position counted from 1.
    public static func generate(jobID: String, index: Int) -> String {
        let a = fnv1a64(jobID.utf8, offset: 0xcbf2_9ce4_8422_2325)
        let b = fnv1a64(jobID.utf8, offset: 0x6c62_272e_07bb_0142)
        return "\(prefix)\(a >> 32).\(a & 0xFFFF_FFFF).\(b >> 32).\(b & 0xFFFF_FFFF).\(index + 1)"
    }

    /// The id a target of `job` carries: the recipient's own, else the job's (single target), else generated.
    public static func resolve(job: SendJob, recipientIndex: Int) -> String {
        if case .recipients(let list) = job.target, recipientIndex < list.count, let own = list[recipientIndex].mnMessageID {
            return own
        }
        if let own = job.mnMessageID { return own }
        return generate(jobID: job.jobID, index: recipientIndex)
    }

    private static func fnv1a64(_ bytes: String.UTF8View, offset: UInt64) -> UInt64 {
        var hash = offset
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
