@testable import ConfigurationFiles
import Glibc
@testable import ServiceRuntime
import Testing
@testable import Connector

/// The small helpers that replaced Foundation's in the shipped binary: path arithmetic,
/// printf formatting and whole writes to a file descriptor (pure logic and a real file).
@Suite struct FoundationFreeHelpersTests {
    @Test func theDirectoryOfAPathIsWhatNSStringGaveAndJoiningPutsOneSlash() {
        #expect(FilePaths.directory(of: "/etc/pc/apps.json") == "/etc/pc")
        #expect(FilePaths.directory(of: "/apps.json") == "/")
        #expect(FilePaths.directory(of: "apps.json") == "")
        #expect(FilePaths.directory(of: "conf/apps.json") == "conf")
        #expect(FilePaths.directory(of: "/etc/pc/") == "/etc")
        #expect(FilePaths.join("/etc/pc", "sa.json") == "/etc/pc/sa.json" && FilePaths.join("/", "sa.json") == "/sa.json")
        #expect(AppConfigurationFile.resolve("keys/sa.json", relativeTo: "/etc/pc/apps.json") == "/etc/pc/keys/sa.json")
        #expect(AppConfigurationFile.resolve("sa.json", relativeTo: "apps.json") == "sa.json")
        #expect(AppConfigurationFile.resolve("/abs/sa.json", relativeTo: "/etc/pc/apps.json") == "/abs/sa.json")
    }

    @Test func printfFormattingRoundsAndPadsLikeC() {
        #expect(String(printf: "%.1f s (%.0f/s)", 2.25, 1499.5) == "2.2 s (1500/s)")
        #expect(String(printf: "%04x", UInt32(0x1f)) == "001f")
        #expect(String(printf: "%.3f", 1.0 / 3) == "0.333")
        #expect(String(printf: "%0300d", 7) == String(repeating: "0", count: 299) + "7", "longer than the first buffer")
    }

    @Test func aCreatedFileGetsEveryByteAndMode0600AndAnExistingOneIsNotOverwritten() throws {
        let path = "/tmp/pc-file-output-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(path) }
        let file = try #require(FileOutput.create(path: path))
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0) }
        try file.write(bytes)
        try file.synchronize()
        try file.close()
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_size == 300_000 && status.st_mode & 0o777 == 0o600)
        #expect(FileOutput.create(path: path) == nil, "O_EXCL: an existing file is refused")
    }
}
