import ConfigurationFiles
import FoundationEssentials
import PushCore

/// Per-App ID event keys (`--event-keys FILE`: `{"keys": {"<app_id>": "<key>"}}`), checked
/// against the `X-Push-Event-Key` header in constant time. With keys configured, every event
/// must name its `app_id`, that App ID must have a key, and the header must equal it.
public struct EventKeys: Sendable {
    private let keys: [String: [UInt8]]

    public init(_ keys: [String: String]) {
        self.keys = keys.mapValues { Array($0.utf8) }
    }

    /// Reads a keys file; the error names the file, never a key.
    public static func load(_ path: String) throws(ConfigurationError) -> EventKeys {
        let bytes = try AppConfigurationFile.readFile(path, what: "event keys")
        guard let json = try? JSONValue.parse(bytes), let object = json["keys"]?.objectValue else {
            throw ConfigurationError("\(path): must be a JSON object {\"keys\": {\"<app_id>\": \"<key>\"}}")
        }
        var keys: [String: String] = [:]
        for (app, value) in object {
            guard let key = value.stringValue, key.utf8.count >= 16 else {
                throw ConfigurationError("\(path): keys.\(app) must be a string of at least 16 bytes")
            }
            keys[app] = key
        }
        return EventKeys(keys)
    }

    /// True when the header `presented` opens events of `appID`.
    public func allows(appID: String?, presented: String?) -> Bool {
        guard let appID, let expected = keys[appID], let presented else { return false }
        return Self.constantTimeEquals(expected, Array(presented.utf8))
    }

    /// True when `presented` is the key of at least one App ID (checked against every key, no
    /// early exit): a header that opens nothing is refused before the body is read.
    public func opensAny(presented: String?) -> Bool {
        guard let presented else { return false }
        let bytes = Array(presented.utf8)
        var any = false
        for key in keys.values { any = Self.constantTimeEquals(key, bytes) || any }
        return any
    }

    /// Compares without an early exit, so timing does not reveal how much of a key matched: every
    /// byte of the longer input is visited, and the lengths are compared in full (not truncated).
    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt(bitPattern: a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= UInt(x ^ y)
        }
        return difference == 0
    }
}
