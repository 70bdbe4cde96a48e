import Foundation
import Testing

/// The shipped binary links FoundationEssentials only: libFoundation and its ICU data were
/// ~10 MiB of every worker's resident memory (docs/decisions/0001-shipped-binary-foundationessentials.md).
/// A module of the binary that imports `Foundation` again fails here, not silently in the next
/// benchmark.
@Suite struct ShippedBinaryTests {
    @Test func pushConnectorLinksNeitherFoundationNorICU() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ldd")
        process.arguments = [try builtProduct("push-connector")]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "ldd failed: \(output)")
        #expect(output.contains("libFoundationEssentials"), "ldd lists the Swift libraries: \(output)")
        let heavy = output.split(separator: "\n").filter { $0.contains("libFoundation.so") || $0.contains("ICU") || $0.contains("libFoundationInternationalization") }
        #expect(heavy.isEmpty, "the shipped binary links \(heavy)")
    }
}
