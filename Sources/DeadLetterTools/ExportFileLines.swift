import CLIKit
import FoundationEssentials
import Glibc
import ServiceRuntime

/// Reads a `dlq export` file line by line with memory bounded by the longest line (which is
/// capped), so that `dlq import` of a file of any size holds one message at a time. Standard
/// input ("-") is first spooled to an unlinked temporary file (mode 0600): the import reads the
/// file twice (check everything, then publish).
final class ExportFileLines {
    /// A line longer than this is refused: a 512 MiB body (the largest a delivery may have) in
    /// base64 plus its headers fits.
    static let maxLineBytes = 720 << 20

    let path: String
    private let fd: Int32

    /// Opens `path` ("-": standard input, spooled); the error names the file.
    init(path: String) throws(CommandFailure) {
        self.path = path
        if path == "-" {
            var template = Array(((ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/push-connector-import-XXXXXX").utf8CString)
            let spool = mkstemp(&template)
            guard spool >= 0 else { throw CommandFailure("-: cannot create a temporary file to spool standard input", exitCode: 2) }
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = read(0, &buffer, buffer.count)
                if n == 0 { break }
                guard n > 0 || errno == EINTR else { close(spool); throw CommandFailure("-: cannot read standard input", exitCode: 2) }
                if n > 0, (try? FileOutput(descriptor: spool).write(buffer[..<n])) == nil {
                    close(spool)
                    throw CommandFailure("-: cannot spool standard input to a temporary file (disk full?)", exitCode: 2)
                }
            }
            fd = spool
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let reason = errno == ENOENT ? "does not exist" : "cannot be read"
                throw CommandFailure("\(path): export file \(reason)", exitCode: 2)
            }
        }
    }

    deinit { close(fd) }

    /// Calls `body` with each line (1-based number, bytes without the newline), from the start
    /// of the file; stops early when `body` returns false.
    func forEachLine(_ body: (Int, ArraySlice<UInt8>) throws -> Bool) throws {
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw CommandFailure("\(path): cannot rewind the export file", exitCode: 2) }
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var number = 0
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw CommandFailure("\(path): read error after line \(number)", exitCode: 2) }
            if n == 0 { break }
            var start = 0
            for i in 0..<n where chunk[i] == 0x0A {
                pending.append(contentsOf: chunk[start..<i])
                number += 1
                guard try body(number, pending[...]) else { return }
                pending.removeAll(keepingCapacity: pending.count <= 1 << 20)
                start = i + 1
            }
            pending.append(contentsOf: chunk[start..<n])
            guard pending.count <= Self.maxLineBytes else {
                throw CommandFailure("\(path):\(number + 1): line longer than \(Self.maxLineBytes >> 20) MiB", exitCode: 2)
            }
        }
        if !pending.isEmpty {
            number += 1
            _ = try body(number, pending[...])
        }
    }
}
