extension JSONValue {
    /// `overlay` merged into `self`: objects merge member by member, recursively; anything else
    /// in the overlay (strings, numbers, arrays, null) replaces what was there.
    public func deepMerged(with overlay: JSONValue) -> JSONValue {
        guard case .object(var base) = self, case .object(let top) = overlay else { return overlay }
        for (key, value) in top {
            if let existing = base[key] {
                base[key] = existing.deepMerged(with: value)
            } else {
                base[key] = value
            }
        }
        return .object(base)
    }
}
