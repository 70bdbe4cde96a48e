import Testing
@testable import Connector

@Test func moduleLinks() { #expect(String(describing: ConnectorModule.self) == "ConnectorModule") }
