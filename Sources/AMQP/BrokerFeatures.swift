/// What the connected RabbitMQ can do that push-connector uses when it is there, read from the
/// `version` the broker announces in connection.start (pure: no I/O). Every feature has a
/// fallback on the lines without it, decided once per connection and logged by whoever declares
/// or consumes (docs/operations.md, "RabbitMQ versions").
///
/// - `streamFiltering` (3.13+): results carry `x-stream-filter-value: <app_id>`, and a reader of
///   one App ID asks the broker to skip the stream chunks without it. Without it the reader gets
///   every result and filters them itself (it always filters again: the broker's filter is a
///   Bloom filter per chunk, so it lets other App IDs through).
/// - `unlimitedDeliveryLimit` (4.0+): a quorum queue takes `x-delivery-limit: -1` as "no
///   limit", the only way to lift 4.x's default of 20. The dead-letter queues have no
///   dead-letter exchange of their own, so a message over the limit there would be dropped.
///   RabbitMQ 3.x has no default limit, and the argument is left out.
public struct BrokerFeatures: Sendable, Equatable, CustomStringConvertible {
    /// The broker's version as announced (`3.10.8`, `4.3.6`), or `unknown`.
    public let version: String
    /// Major, minor and patch, 0 where the text has none; nil when it has no number at all.
    public let release: (major: Int, minor: Int, patch: Int)?

    public init(serverVersion: String?) {
        version = serverVersion ?? "unknown"
        let numbers = (serverVersion ?? "").split(separator: "-", maxSplits: 1).first.map {
            $0.split(separator: ".").map { Int($0) }
        } ?? []
        if let major = numbers.first ?? nil {
            release = (major, numbers.count > 1 ? numbers[1] ?? 0 : 0, numbers.count > 2 ? numbers[2] ?? 0 : 0)
        } else {
            release = nil
        }
    }

    /// What a broker of unknown version is assumed to be: the oldest line supported (3.10).
    public static let baseline = BrokerFeatures(serverVersion: "3.10.0")

    /// True at `major.minor` or later; false for an unknown version (the fallbacks are safe).
    public func isAtLeast(_ major: Int, _ minor: Int) -> Bool {
        guard let release else { return false }
        return (release.major, release.minor) >= (major, minor)
    }

    public var streamFiltering: Bool { isAtLeast(3, 13) }
    public var unlimitedDeliveryLimit: Bool { isAtLeast(4, 0) }

    /// One line for the log: the version and which features are on.
    public var description: String {
        "RabbitMQ \(version): stream filtering \(streamFiltering ? "on" : "off (reader filters alone)"), "
            + "dead-letter queues \(unlimitedDeliveryLimit ? "x-delivery-limit -1 (no limit)" : "no x-delivery-limit (none by default)")"
    }

    public static func == (a: BrokerFeatures, b: BrokerFeatures) -> Bool { a.version == b.version }
}
