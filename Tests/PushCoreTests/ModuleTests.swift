import Testing
@testable import PushCore

@Test func moduleLinks() { #expect(String(describing: PushCoreModule.self) == "PushCoreModule") }
