/// The field names FCM HTTP v1 accepts in a `message`, section by section.
///
/// FCM's JSON parser refuses unknown names (400 "Unknown name"), so a typo in an App ID's extra
/// options would fail every send: the validator checks names against this schema first.
indirect enum FieldShape: Sendable {
    case string
    case bool
    case integer
    case stringMap
    case stringArray
    /// Any JSON object: FCM passes it through (APNs payload, web notification).
    case freeObject
    /// Any JSON value FCM accepts loosely (e.g. integer arrays, light settings).
    case any
    case object(FCMMessageSchema)
}

/// A set of known fields with their shapes.
struct FCMMessageSchema: Sendable {
    let fields: [String: FieldShape]

    static let fcmOptions = FCMMessageSchema(fields: ["analytics_label": .string])

    static let androidNotification = FCMMessageSchema(fields: [
        "title": .string, "body": .string, "icon": .string, "color": .string, "sound": .string, "tag": .string,
        "click_action": .string, "body_loc_key": .string, "body_loc_args": .stringArray, "title_loc_key": .string,
        "title_loc_args": .stringArray, "channel_id": .string, "ticker": .string, "sticky": .bool, "event_time": .string,
        "local_only": .bool, "notification_priority": .string, "default_sound": .bool, "default_vibrate_timings": .bool,
        "default_light_settings": .bool, "vibrate_timings": .stringArray, "visibility": .string, "notification_count": .integer,
        "light_settings": .any, "image": .string, "bypass_proxy_notification": .bool, "proxy": .string,
    ])

    static let android = FCMMessageSchema(fields: [
        "collapse_key": .string, "priority": .string, "ttl": .string, "restricted_package_name": .string,
        "data": .stringMap, "notification": .object(androidNotification), "fcm_options": .object(fcmOptions),
        "direct_boot_ok": .bool, "bandwidth_constrained_ok": .bool, "restricted_satellite_ok": .bool,
    ])

    static let apns = FCMMessageSchema(fields: [
        "headers": .stringMap, "payload": .freeObject, "live_activity_token": .string,
        "fcm_options": .object(FCMMessageSchema(fields: ["analytics_label": .string, "image": .string])),
    ])

    static let webpush = FCMMessageSchema(fields: [
        "headers": .stringMap, "data": .stringMap, "notification": .freeObject,
        "fcm_options": .object(FCMMessageSchema(fields: ["link": .string, "analytics_label": .string])),
    ])

    static let notification = FCMMessageSchema(fields: ["title": .string, "body": .string, "image": .string])

    /// The sections an App ID's extra options or a job's options may hold.
    static let optionSections = FCMMessageSchema(fields: [
        "android": .object(android), "apns": .object(apns), "webpush": .object(webpush), "fcm_options": .object(fcmOptions),
    ])

    static let message = FCMMessageSchema(fields: [
        "name": .string, "data": .stringMap, "notification": .object(notification), "android": .object(android),
        "apns": .object(apns), "webpush": .object(webpush), "fcm_options": .object(fcmOptions),
        "token": .string, "topic": .string, "condition": .string,
    ])

    /// Issues for unknown names and wrong value kinds under `path`.
    func check(_ object: [String: JSONValue], path: String) -> [ContractIssue] {
        var issues: [ContractIssue] = []
        for key in object.keys.sorted() {
            let value = object[key]!
            let field = path.isEmpty ? key : "\(path).\(key)"
            guard let shape = fields[key] else {
                issues.append(ContractIssue(.unknownField, field: field,
                                            "unknown field name; FCM refuses it (known: \(fields.keys.sorted().joined(separator: ", ")))"))
                continue
            }
            issues.append(contentsOf: FCMMessageSchema.check(value, shape: shape, field: field))
        }
        return issues
    }

    private static func check(_ value: JSONValue, shape: FieldShape, field: String) -> [ContractIssue] {
        func wrong(_ expected: String) -> [ContractIssue] {
            [ContractIssue(.wrongType, field: field, "must be \(expected), got \(value.kindDescription)")]
        }
        switch shape {
        case .any: return []
        case .string: if case .string = value { return [] }; return wrong("a string")
        case .bool: if case .bool = value { return [] }; return wrong("true or false")
        case .integer: if value.intValue != nil { return [] }; return wrong("an integer")
        case .freeObject: if case .object = value { return [] }; return wrong("an object")
        case .stringArray:
            guard case .array(let items) = value else { return wrong("an array of strings") }
            return items.allSatisfy { $0.stringValue != nil } ? [] : wrong("an array of strings")
        case .stringMap:
            guard case .object(let members) = value else { return wrong("an object of strings") }
            return members.keys.sorted().compactMap { key in
                let v = members[key]!
                guard v.stringValue == nil else { return nil }
                return ContractIssue(.dataValueNotString, field: "\(field).\(key)", "values must be strings, got \(v.kindDescription)")
            }
        case .object(let schema):
            guard case .object(let members) = value else { return wrong("an object") }
            return schema.check(members, path: field)
        }
    }
}
