/// The configuration of one App ID: its Firebase project, credentials, default message type,
/// default data payload and extra options (contract: docs/contracts.md).
public struct AppConfiguration: Sendable, Equatable {
    public var appID: String
    public var projectID: String
    /// Path of the service-account JSON; read by the FCM adapter, never by the core. Nil:
    /// Application Default Credentials (`GOOGLE_APPLICATION_CREDENTIALS`, else the metadata server).
    public var credentialsFile: String?
    public var defaultMessageType: MessageType
    public var defaultPayload: [String: String]
    /// `android`, `apns`, `webpush`, `fcm_options` sections merged into every message of the app.
    public var extraOptions: [String: JSONValue] { didSet { sections = AppSections(extraOptions: extraOptions) } }
    /// What `extraOptions` gives a message of each type, worked out once (kept in step with it).
    public private(set) var sections: AppSections
    /// `rate_limit_per_minute`: sends per minute this process allows the app's Firebase project
    /// (App IDs sharing a project share one budget, the lowest limit applies); nil: FCM's default
    /// quota. Counted per process: with N replicas, give each quota / N.
    public var rateLimitPerMinute: Int?
    /// `allowed_origins`: the web origins (`https://shop.example`, or `*`) whose pages may post
    /// this App ID's events to the events endpoint from a browser (CORS). Empty: none.
    public var allowedOrigins: [String] = []

    public init(appID: String, projectID: String, credentialsFile: String?, defaultMessageType: MessageType = .notification,
                defaultPayload: [String: String] = [:], extraOptions: [String: JSONValue] = [:], rateLimitPerMinute: Int? = nil) {
        self.appID = appID
        self.projectID = projectID
        self.credentialsFile = credentialsFile
        self.defaultMessageType = defaultMessageType
        self.defaultPayload = defaultPayload
        self.extraOptions = extraOptions
        sections = AppSections(extraOptions: extraOptions)
        self.rateLimitPerMinute = rateLimitPerMinute
    }

    /// The largest `rate_limit_per_minute` accepted (FCM's default quota is 600 000 / minute).
    public static let maxRateLimitPerMinute = 100_000_000

    /// Why `origin` cannot be an entry of `allowed_origins`, nil when it can: `*`, or a web
    /// origin as browsers send it, `http[s]://host[:port]` in lower case, with no path.
    public static func originProblem(_ origin: String) -> String? {
        if origin == "*" { return nil }
        let parts = origin.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "https" || parts[0] == "http" else { return "must start with https:// or http://" }
        let authority = parts[1]
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else {
            return "must be scheme://host[:port], with no path, query or user (as a browser's Origin header)"
        }
        guard authority == authority.lowercased() else { return "must be in lower case (as a browser's Origin header)" }
        return nil
    }
}

/// Every App ID the connector serves, looked up by `app_id`.
public struct AppRegistry: Sendable, Equatable {
    public private(set) var apps: [String: AppConfiguration]

    public init(_ apps: [AppConfiguration]) {
        self.apps = Dictionary(apps.map { ($0.appID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public subscript(appID: String) -> AppConfiguration? { apps[appID] }

    /// App IDs in a stable order.
    public var appIDs: [String] { apps.keys.sorted() }

    /// Reads the App ID file (`{"apps": [...]}`). Every problem is reported with its field path,
    /// including extra options FCM would refuse (unknown names, bad ttl, …), so that a typo fails
    /// at start-up rather than on every send.
    public static func decode<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ContractError) -> AppRegistry {
        let json: JSONValue
        do {
            json = try JSONValue.parse(bytes)
        } catch {
            throw ContractError(document: "App ID configuration", issues: [ContractIssue(.notJSON, field: "$", error.description)])
        }
        guard case .object(let root) = json else {
            throw ContractError(document: "App ID configuration",
                                issues: [ContractIssue(.wrongType, field: "$", "must be an object with an \"apps\" array")])
        }
        var r = FieldReader(root, path: "")
        r.schemaVersion(supported: 1)
        guard let list = r.optionalArray("apps") else {
            if root["apps"] == nil { r.report(ContractIssue(.missingField, field: "apps", "required field is missing")) }
            throw ContractError(document: "App ID configuration", issues: r.issues)
        }
        var apps: [AppConfiguration] = []
        var seen = Set<String>()
        for (_, path, o) in r.objectElements(list, path: "apps") {
            var ar = FieldReader(o, path: path)
            let appID = ar.requiredString("app_id", maxLength: 128)
            let projectID = ar.requiredString("project_id", maxLength: 128)
            let credentials = ar.optionalString("credentials_file", maxLength: 4096)
            if credentials?.isEmpty == true {
                ar.report(ContractIssue(.invalidValue, field: "\(path).credentials_file",
                                        "must name a file; leave it out for Application Default Credentials"))
            }
            if let appID, let issue = IdentifierRules.appIDIssue(appID, field: "\(path).app_id") { ar.report(issue) }
            if let projectID, let issue = IdentifierRules.projectIDIssue(projectID, field: "\(path).project_id") { ar.report(issue) }
            var type = MessageType.notification
            if let raw = ar.optionalString("default_message_type", maxLength: 32) {
                if let t = MessageType(rawValue: raw) { type = t } else {
                    ar.report(ContractIssue(.invalidValue, field: "\(path).default_message_type",
                                            "must be \"notification\" or \"data\", got \"\(raw)\""))
                }
            }
            let payload = ar.optionalStringMap("default_payload") ?? [:]
            for key in payload.keys {
                if let issue = MessageValidator.dataKeyIssue(key, field: "\(path).default_payload.\(key)") { ar.report(issue) }
            }
            var extra: [String: JSONValue] = [:]
            if let options = ar.optionalObject("extra_options") {
                for (section, value) in options {
                    guard SendJob.optionSections.contains(section) else {
                        ar.report(ContractIssue(.unknownField, field: "\(path).extra_options.\(section)",
                                                "unknown section (known: \(SendJob.optionSections.joined(separator: ", ")))"))
                        continue
                    }
                    extra[section] = value
                }
                ar.report(contentsOf: MessageValidator().validateSections(extra, path: "\(path).extra_options"))
            }
            var origins: [String] = []
            if let list = ar.optionalArray("allowed_origins") {
                for (index, value) in list.enumerated() {
                    let field = "\(path).allowed_origins[\(index)]"
                    guard let origin = value.stringValue else {
                        ar.report(ContractIssue(.wrongType, field: field, "must be a string, got \(value.kindDescription)"))
                        continue
                    }
                    if let problem = AppConfiguration.originProblem(origin) {
                        ar.report(ContractIssue(.invalidValue, field: field, "\"\(origin)\" \(problem)"))
                    } else {
                        origins.append(origin)
                    }
                }
            }
            var rate: Int?
            if let value = o["rate_limit_per_minute"], value != .null {
                if case .int(let n) = value, (1...Int64(AppConfiguration.maxRateLimitPerMinute)).contains(n) { rate = Int(n) } else {
                    ar.report(ContractIssue(.invalidValue, field: "\(path).rate_limit_per_minute",
                                            "must be a whole number of sends per minute from 1 to \(AppConfiguration.maxRateLimitPerMinute)"))
                }
            }
            if let appID, !seen.insert(appID).inserted {
                ar.report(ContractIssue(.invalidValue, field: "\(path).app_id", "app_id \"\(appID)\" appears twice"))
            }
            r.report(contentsOf: ar.issues)
            if let appID, let projectID {
                var app = AppConfiguration(appID: appID, projectID: projectID, credentialsFile: credentials,
                                           defaultMessageType: type, defaultPayload: payload, extraOptions: extra,
                                           rateLimitPerMinute: rate)
                app.allowedOrigins = origins
                apps.append(app)
            }
        }
        guard r.issues.isEmpty else { throw ContractError(document: "App ID configuration", issues: r.issues) }
        return AppRegistry(apps)
    }
}
