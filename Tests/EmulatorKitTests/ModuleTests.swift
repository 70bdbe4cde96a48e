import Testing
@testable import EmulatorKit

@Test func moduleLinks() { #expect(String(describing: EmulatorKitModule.self) == "EmulatorKitModule") }
