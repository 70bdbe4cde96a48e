import Testing
@testable import AMQP

@Test func moduleLinks() { #expect(String(describing: AMQPModule.self) == "AMQPModule") }
