extension StringProtocol {
    /// Without its leading and trailing white space: spaces and tabs, and line breaks too when
    /// `newlines` is true (what Foundation's `trimmingCharacters(in: .whitespaces)` and
    /// `.whitespacesAndNewlines` give, without linking Foundation).
    public func trimmingWhitespace(newlines: Bool = false) -> String {
        func blank(_ c: Character) -> Bool { c.isWhitespace && (newlines || !c.isNewline) }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return String(self[first...last])
    }
}
