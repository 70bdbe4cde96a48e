extension String {
    /// The text padded with spaces to `width` (at least one space after it), for the columns of
    /// `--help`, `--check` and the DLQ tables.
    package func padding(to width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}
