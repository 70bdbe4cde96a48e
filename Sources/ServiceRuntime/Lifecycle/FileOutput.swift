import Glibc

/// A file descriptor written whole (short writes and `EINTR` retried), and standard input read to
/// its end: what Foundation's `FileHandle` gave, without linking Foundation.
package struct FileOutput: Sendable {
    package let descriptor: Int32

    package init(descriptor: Int32) { self.descriptor = descriptor }

    package static let standardOutput = FileOutput(descriptor: STDOUT_FILENO)
    package static let standardError = FileOutput(descriptor: STDERR_FILENO)

    /// Creates `path` for writing, readable by its owner only; fails if it exists.
    package static func create(path: String) -> FileOutput? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return descriptor < 0 ? nil : FileOutput(descriptor: descriptor)
    }

    /// Writes every byte of `bytes`; throws the `errno` of a failed write.
    package func write(_ bytes: some Collection<UInt8>) throws(FileWriteError) {
        let done = bytes.withContiguousStorageIfAvailable { buffer in writeAll(buffer) }
        if let done { return try done.get() }
        try Array(bytes).withUnsafeBufferPointer { writeAll($0) }.get()
    }

    /// Writes `text`, ignoring failures (a closed standard error has nowhere to say so).
    package func write(line text: String) {
        var text = text + "\n"
        text.withUTF8 { _ = writeAll($0) }
    }

    /// Flushes the file to its device.
    package func synchronize() throws(FileWriteError) {
        if fsync(descriptor) != 0 { throw FileWriteError(code: errno) }
    }

    package func close() throws(FileWriteError) {
        if Glibc.close(descriptor) != 0 { throw FileWriteError(code: errno) }
    }

    private func writeAll(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<Void, FileWriteError> {
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 && errno == EINTR { continue }
            // A write that takes nothing would loop forever: a failure too.
            guard written > 0 else { return .failure(FileWriteError(code: written < 0 ? errno : EIO)) }
            offset += written
        }
        return .success(())
    }

    /// Standard input, read to its end.
    package static func readStandardInput() -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }
}

/// A write to a file failed; `code` is the `errno`.
package struct FileWriteError: Error, CustomStringConvertible {
    package let code: Int32
    package init(code: Int32) { self.code = code }
    package var description: String { String(cString: strerror(code)) }
}
