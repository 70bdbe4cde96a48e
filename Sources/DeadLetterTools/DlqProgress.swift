import FoundationEssentials
import Glibc
import ServiceRuntime

/// Progress of a long DLQ operation on standard error — count, rate and ETA, redrawn in place at
/// most 5 times a second — only when standard error is a terminal and not in `--json` mode.
/// Not thread-safe: one operation drives it from one thread.
final class DlqProgress {
    private let label: String
    private let total: Int?
    private let enabled: Bool
    private let start = Date()
    private var lastDraw = Date.distantPast
    private(set) var count = 0

    init(label: String, total: Int?, quiet: Bool) {
        self.label = label
        self.total = total
        enabled = !quiet && isatty(STDERR_FILENO) == 1
    }

    /// Seconds since the operation started.
    var elapsed: Double { Date().timeIntervalSince(start) }

    /// Messages per second so far.
    var rate: Double { elapsed > 0 ? Double(count) / elapsed : 0 }

    func step() {
        count += 1
        guard enabled, Date().timeIntervalSince(lastDraw) >= 0.2 else { return }
        lastDraw = Date()
        var text = "\r\u{1B}[K\(label): \(count)"
        if let total, total > 0 { text += "/\(total) (\(min(100, count * 100 / total))%)" }
        text += String(printf: "  %.0f/s", rate)
        if let total, rate > 0, total > count { text += String(printf: "  ETA %.0fs", Double(total - count) / rate) }
        try? FileOutput.standardError.write(text.utf8)
    }

    /// Clears the progress line.
    func finish() {
        if enabled { try? FileOutput.standardError.write("\r\u{1B}[K".utf8) }
    }
}
