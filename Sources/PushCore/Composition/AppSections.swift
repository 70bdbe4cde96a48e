/// The option sections (`android`, `apns`, `webpush`, `fcm_options`) an App ID's messages carry
/// when the job brings no `options` of its own, for each message type, and whether they pass the
/// validator: worked out once per App ID configuration instead of once per job.
///
/// A data-only message's `apns` section always ends with the background headers and
/// `content-available: 1` (`merged(base:overlay:type:)`), whatever the App ID says.
///
/// The verdicts use the validator's section checks only (names, kinds, value rules), which no
/// validator setting changes. Every one of those checks looks at one top-level member of the
/// message, so a message whose sections are clean is clean exactly when its other members
/// (`notification`, `data`) are: `MessageComposer.prepare` checks only those per job.
public struct AppSections: Sendable, Equatable {
    private let notification: [String: JSONValue]
    private let data: [String: JSONValue]
    private let notificationIsClean: Bool
    private let dataIsClean: Bool
    private let notificationMembers: [EncodedMember]
    private let dataMembers: [EncodedMember]

    /// The sections of `extraOptions` (other members are ignored, as in every message).
    public init(extraOptions: [String: JSONValue]) {
        notification = Self.merged(base: extraOptions, overlay: [:], type: .notification)
        data = Self.merged(base: extraOptions, overlay: [:], type: .data)
        let validator = MessageValidator()
        notificationIsClean = validator.sharedIssues(message: notification).isEmpty
        dataIsClean = validator.sharedIssues(message: data).isEmpty
        notificationMembers = EncodedMember.members(of: notification)
        dataMembers = EncodedMember.members(of: data)
    }

    /// The sections of a message of `type` from a job without options.
    public func sections(for type: MessageType) -> [String: JSONValue] {
        type == .data ? data : notification
    }

    /// `sections(for: type)` encoded, in key order: written once per configuration, copied into
    /// every message of a job without options.
    func encodedMembers(for type: MessageType) -> [EncodedMember] {
        type == .data ? dataMembers : notificationMembers
    }

    /// True when `sections(for: type)` has no issue.
    public func areClean(for type: MessageType) -> Bool {
        type == .data ? dataIsClean : notificationIsClean
    }

    /// The App ID's sections (`base`) deep-merged with a job's `overlay`, section by section, the
    /// background APNs headers last for a data-only message.
    public static func merged(base: [String: JSONValue], overlay: [String: JSONValue], type: MessageType) -> [String: JSONValue] {
        var message: [String: JSONValue] = [:]
        for section in SendJob.optionSections {
            switch (base[section], overlay[section]) {
            case (let base?, let overlay?): message[section] = base.deepMerged(with: overlay)
            case (let base?, nil): message[section] = base
            case (nil, let overlay?): message[section] = overlay
            case (nil, nil): break
            }
        }
        if type == .data {
            message["apns"] = (message["apns"] ?? .object([:])).deepMerged(with: background)
        }
        return message
    }

    /// APNs refuses priority 10 for background pushes: a data-only message is sent as one.
    private static let background: JSONValue = [
        "headers": ["apns-priority": "5", "apns-push-type": "background"],
        "payload": ["aps": ["content-available": 1]],
    ]
}

/// One member of a JSON object written out, `"key":value` (compact, keys of nested objects
/// sorted): what `JSONValue.encodedBytes()` writes for it inside its object.
struct EncodedMember: Sendable, Equatable {
    let key: String
    let bytes: [UInt8]

    init(key: String, value: JSONValue) {
        var bytes: [UInt8] = []
        JSONValue.writeString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        value.write(to: &bytes, style: .compact, indent: 0)
        self.key = key
        self.bytes = bytes
    }

    init(key: String, bytes: [UInt8]) {
        self.key = key
        self.bytes = bytes
    }

    /// Every member of `object`, in key order.
    static func members(of object: [String: JSONValue]) -> [EncodedMember] {
        object.keys.sorted().map { EncodedMember(key: $0, value: object[$0]!) }
    }
}
