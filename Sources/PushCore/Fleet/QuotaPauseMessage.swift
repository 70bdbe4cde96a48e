/// The control-exchange message announcing a quota pause to the fleet:
/// `{"project":"<firebase project id>","paused_until":<epoch milliseconds>}`.
public struct QuotaPauseMessage: Sendable, Equatable {
    public var project: String
    /// When the pause ends, in milliseconds since 1970 (UTC).
    public var pausedUntil: Int64

    public init(project: String, pausedUntil: Int64) {
        self.project = project
        self.pausedUntil = pausedUntil
    }

    /// Why a control message was refused.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Longest pause a message may ask for; beyond it the message is refused (a corrupt or
    /// hostile deadline must not stop a project for days).
    public static let maximumPauseMillis: Int64 = 3_600_000

    /// The compact JSON body.
    public var encoded: [UInt8] {
        JSONValue.object(["project": .string(project), "paused_until": .int(pausedUntil)]).encodedBytes()
    }

    /// Decodes a body; refuses anything but an object with a valid project id (at most 100
    /// characters of `[a-z0-9-._:]`) and a deadline not later than `now + maximumPauseMillis`.
    public static func decode(_ body: some Collection<UInt8>, now: Int64) throws(Invalid) -> QuotaPauseMessage {
        let value: JSONValue
        do { value = try JSONValue.parse(body, maxDepth: 4) } catch { throw Invalid(description: "not JSON: \(error)") }
        guard let project = value["project"]?.stringValue, !project.isEmpty, project.count <= 100,
              project.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || "-._:".utf8.contains($0) })
        else { throw Invalid(description: "no valid \"project\"") }
        guard let until = value["paused_until"]?.intValue else { throw Invalid(description: "no integer \"paused_until\"") }
        guard until <= now + maximumPauseMillis else {
            throw Invalid(description: "\"paused_until\" is more than \(maximumPauseMillis / 60_000) minutes ahead")
        }
        return QuotaPauseMessage(project: project, pausedUntil: until)
    }
}
