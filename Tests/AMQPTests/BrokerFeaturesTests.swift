import AMQP
import Testing

/// Which RabbitMQ features push-connector uses, read from the version the broker announces, and
/// the arguments that follow from them (pure).
@Suite struct BrokerFeaturesTests {
    @Test(arguments: [("3.10.8", false, false), ("3.12.14", false, false), ("3.13.0", true, false), ("4.0.5", true, true),
                      ("4.3.6", true, true), ("4.1.0-rc.1", true, true), ("5", true, true)])
    func featuresFollowTheAnnouncedVersion(_ version: String, _ filtering: Bool, _ unlimited: Bool) {
        let features = BrokerFeatures(serverVersion: version)
        #expect(features.streamFiltering == filtering)
        #expect(features.unlimitedDeliveryLimit == unlimited)
    }

    @Test(arguments: [nil, "", "unknown", "x.y"])
    func anUnknownVersionGetsTheFallbacks(_ version: String?) {
        let features = BrokerFeatures(serverVersion: version)
        #expect(!features.streamFiltering && !features.unlimitedDeliveryLimit)
    }

    @Test func deadLetterQueuesGetNoLimitOnlyWhereMinusOneMeansNoLimit() throws {
        let topology = Topology(prefix: "p")
        for name in ["p.jobs.dlq", "p.events.dlq"] {
            let dlq = try #require(topology.queues.first { $0.name == name })
            #expect(dlq.arguments(on: BrokerFeatures(serverVersion: "4.0.5"))["x-delivery-limit"] == .int(-1))
            // 3.x takes -1 as "dead-letter at the first return": the argument is left out.
            #expect(dlq.arguments(on: BrokerFeatures(serverVersion: "3.10.8"))["x-delivery-limit"] == nil)
        }
        let events = try #require(topology.queues.first { $0.name == "p.events" })
        for version in ["3.10.8", "4.3.6"] {
            #expect(events.arguments(on: BrokerFeatures(serverVersion: version))["x-delivery-limit"] == 20)
            #expect(events.earlierArguments(on: BrokerFeatures(serverVersion: version))["x-delivery-limit"] == nil)
        }
    }
}
