/// Finds the recipients of a job that repeat an earlier one: the same registration token (the
/// device would get the push twice) or the same `mn_message_id` (its events and results could
/// not be told apart). The first occurrence wins; each repeat gets one issue and is rejected
/// alone. Empty tokens are left to the token rule (INVALID_TOKEN). Pure.
enum RecipientDuplicates {
    static func issues(of job: SendJob) -> [Int: ContractIssue] {
        guard case .recipients(let list) = job.target, list.count > 1 else { return [:] }
        var issues: [Int: ContractIssue] = [:]
        var tokens: [String: Int] = [:]
        tokens.reserveCapacity(list.count)
        for (index, recipient) in list.enumerated() where !recipient.token.isEmpty {
            if let first = tokens[recipient.token] {
                issues[index] = ContractIssue(.duplicateToken, field: "recipients[\(index)].token",
                                              "the same token as recipients[\(first)]: sent once, to the first")
            } else {
                tokens[recipient.token] = index
            }
        }
        // Generated ids differ by index; only recipients' own ids can repeat (a job-level id is
        // for a single target).
        guard list.contains(where: { $0.mnMessageID != nil }) else { return issues }
        var ids: [String: Int] = [:]
        for index in list.indices where issues[index] == nil {
            let id = MessageID.resolve(job: job, recipientIndex: index)
            if let first = ids[id] {
                issues[index] = ContractIssue(.duplicateMessageID, field: "recipients[\(index)].mn_message_id",
                                              "the same mn_message_id as recipients[\(first)]")
            } else {
                ids[id] = index
            }
        }
        return issues
    }
}
