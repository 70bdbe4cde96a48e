import Testing
@testable import FCM

@Test func moduleLinks() { #expect(String(describing: FCMModule.self) == "FCMModule") }
