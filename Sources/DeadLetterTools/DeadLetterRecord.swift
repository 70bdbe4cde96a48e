import AMQP
import FoundationEssentials
import PushCore

/// One DLQ message as a line of the `dlq export` file (JSON Lines), and back. Pure.
///
/// Lossless: the body is the UTF-8 text itself when it is valid UTF-8 and JSON
/// (`"body_encoding": "utf8"`), otherwise base64 (`"base64"`); every basic property is kept, and
/// every header with its AMQP type (`{"type": "int", "value": 3}`), nested tables and arrays
/// included. Only `x-delivery-count` is left out: the broker sets it itself and raises it every
/// time anyone browses the queue. Example line (wrapped here):
///
///     {"format":"push-connector-dlq/1","body_encoding":"utf8","body":"{\"job_id\":\"j1\",…}",
///      "properties":{"content_type":"application/json","delivery_mode":2},
///      "headers":{"push-error-code":{"type":"string","value":"UNKNOWN_APP"},
///                 "push-replays":{"type":"int","value":0}}}
public struct DeadLetterRecord: Sendable, Equatable {
    /// The `format` member of every line.
    public static let format = "push-connector-dlq/1"
    /// Broker-maintained headers that an export leaves out.
    public static let brokerCounters: Set<String> = ["x-delivery-count"]

    public var body: Data
    public var properties: MessageProperties

    public init(body: Data, properties: MessageProperties) {
        self.body = body
        self.properties = properties
        for name in Self.brokerCounters { self.properties.headers.removeValue(forKey: name) }
    }

    /// Why a line could not be read back.
    public struct DecodingError: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: encoding

    /// The record as one JSON value (write it compact, one per line).
    public var json: JSONValue {
        var object: [String: JSONValue] = ["format": .string(Self.format)]
        if (try? JSONValue.parse(body)) != nil {
            object["body_encoding"] = "utf8"
            object["body"] = .string(String(decoding: body, as: UTF8.self))
        } else {
            object["body_encoding"] = "base64"
            object["body"] = .string(body.base64EncodedString())
        }
        let p = properties
        var props: [String: JSONValue] = ["delivery_mode": .int(p.persistent ? 2 : 1)]
        let texts: [(String, String?)] = [
            ("content_type", p.contentType), ("content_encoding", p.contentEncoding), ("correlation_id", p.correlationID),
            ("reply_to", p.replyTo), ("expiration", p.expiration), ("message_id", p.messageID), ("type", p.type),
            ("app_id", p.appID),
        ]
        for case let (name, value?) in texts { props[name] = .string(value) }
        if let priority = p.priority { props["priority"] = .int(Int64(priority)) }
        if let timestamp = p.timestamp { props["timestamp"] = .int(Int64(exactly: timestamp.timeIntervalSince1970.rounded(.down)) ?? 0) }
        object["properties"] = .object(props)
        object["headers"] = .object(p.headers.mapValues(Self.encode))
        return .object(object)
    }

    /// One compact JSON line (no newline).
    public var line: String { json.encodedString(.compact) }

    static func encode(_ value: AMQPFieldValue) -> JSONValue {
        func typed(_ type: String, _ value: JSONValue) -> JSONValue { ["type": .string(type), "value": value] }
        switch value {
        case .string(let s): return typed("string", .string(s))
        case .bytes(let d): return typed("bytes", .string(d.base64EncodedString()))
        case .int(let i): return typed("int", .int(i))
        case .bool(let b): return typed("bool", .bool(b))
        case .double(let d):
            return typed("double", d.isFinite ? .double(d) : .string(d.isNaN ? "NaN" : (d > 0 ? "Infinity" : "-Infinity")))
        case .timestamp(let date): return typed("timestamp", .int(Int64(exactly: date.timeIntervalSince1970.rounded(.down)) ?? 0))
        case .table(let t): return typed("table", .object(t.mapValues(encode)))
        case .array(let items): return typed("array", .array(items.map(encode)))
        case .void: return typed("void", .null)
        }
    }

    // MARK: decoding

    /// Reads one line written by `line`.
    public static func decode(line: some Collection<UInt8>) throws(DecodingError) -> DeadLetterRecord {
        let json: JSONValue
        do { json = try JSONValue.parse(line) } catch { throw DecodingError("not JSON: \(error)") }
        guard case .object(let object) = json else { throw DecodingError("not a JSON object") }
        guard object["format"]?.stringValue == format else {
            throw DecodingError("format is not \"\(format)\" (not a dlq export line?)")
        }
        guard let text = object["body"]?.stringValue else { throw DecodingError("body: missing or not a string") }
        let body: Data
        switch object["body_encoding"]?.stringValue {
        case "utf8": body = Data(text.utf8)
        case "base64":
            guard let data = Data(base64Encoded: text) else { throw DecodingError("body: not valid base64") }
            body = data
        default: throw DecodingError("body_encoding: expected \"utf8\" or \"base64\"")
        }
        guard case .object(let props)? = object["properties"] ?? .object([:]) else {
            throw DecodingError("properties: not an object")
        }
        var p = MessageProperties(persistent: props["delivery_mode"]?.intValue != 1)
        func property(_ key: String) throws(DecodingError) -> String? {
            guard let value = props[key] else { return nil }
            guard let s = value.stringValue else { throw DecodingError("properties.\(key): not a string") }
            return s
        }
        p.contentType = try property("content_type")
        p.contentEncoding = try property("content_encoding")
        p.correlationID = try property("correlation_id")
        p.replyTo = try property("reply_to")
        p.expiration = try property("expiration")
        p.messageID = try property("message_id")
        p.type = try property("type")
        p.appID = try property("app_id")
        if let priority = props["priority"] {
            guard let v = priority.intValue, (0...255).contains(v) else { throw DecodingError("properties.priority: not 0-255") }
            p.priority = UInt8(v)
        }
        if let timestamp = props["timestamp"] {
            guard let v = timestamp.intValue else { throw DecodingError("properties.timestamp: not whole seconds") }
            p.timestamp = Date(timeIntervalSince1970: TimeInterval(v))
        }
        guard case .object(let headers)? = object["headers"] ?? .object([:]) else { throw DecodingError("headers: not an object") }
        for (name, value) in headers { p.headers[name] = try decode(value, path: "headers.\(name)") }
        return DeadLetterRecord(body: body, properties: p)
    }

    static func decode(_ json: JSONValue, path: String) throws(DecodingError) -> AMQPFieldValue {
        guard let type = json["type"]?.stringValue, let value = json["value"] else {
            throw DecodingError("\(path): expected {\"type\": …, \"value\": …}")
        }
        func bad() -> DecodingError { DecodingError("\(path): not a valid \(type) value") }
        switch type {
        case "string": guard let s = value.stringValue else { throw bad() }; return .string(s)
        case "bytes":
            guard let s = value.stringValue, let d = Data(base64Encoded: s) else { throw bad() }
            return .bytes(d)
        case "int": guard case .int(let i) = value else { throw bad() }; return .int(i)
        case "bool": guard let b = value.boolValue else { throw bad() }; return .bool(b)
        case "double":
            switch value {
            case .double(let d): return .double(d)
            case .int(let i): return .double(Double(i))
            case .string("NaN"): return .double(.nan)
            case .string("Infinity"): return .double(.infinity)
            case .string("-Infinity"): return .double(-.infinity)
            default: throw bad()
            }
        case "timestamp": guard let i = value.intValue else { throw bad() }; return .timestamp(Date(timeIntervalSince1970: TimeInterval(i)))
        case "table":
            guard case .object(let members) = value else { throw bad() }
            var table: AMQPTable = [:]
            for (key, member) in members { table[key] = try decode(member, path: "\(path).\(key)") }
            return .table(table)
        case "array":
            guard case .array(let items) = value else { throw bad() }
            var result: [AMQPFieldValue] = []
            for (index, item) in items.enumerated() { result.append(try decode(item, path: "\(path)[\(index)]")) }
            return .array(result)
        case "void": return .void
        default: throw DecodingError("\(path): unknown header type \"\(type)\"")
        }
    }
}
