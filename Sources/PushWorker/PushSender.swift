import ConfigurationFiles
import FCM
import FoundationEssentials
import PushCore

/// Sends one composed FCM request for an App ID: the seam between the pipeline and FCM, so that
/// pipeline logic can be unit-tested with an in-memory sender while integration tests use the
/// real client against the emulator.
public protocol PushSender: Sendable {
    /// Sends one composed request for `app` and gives its outcome to `completion` (from any
    /// thread, possibly at once on the calling one): a request in flight holds no task.
    /// `placed`: `pace` took the send's turn.
    func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void)
    /// Takes the turn of the App ID's next send at its project's rate, before the send is
    /// composed or takes a send-window permit, and calls `go` once it may start (from any thread):
    /// true when the turn is taken (hand it to `start` as `placed`), false when `start` decides.
    /// `urgent`: a high-priority job's send, which takes the next turn ahead of paced sends.
    func pace(app: AppConfiguration, urgent: Bool, then go: @escaping @Sendable (_ placed: Bool) -> Void)
}

extension PushSender {
    /// `start`, waited for in the caller's task (the one-off `push` command, tests).
    public func send(_ body: [UInt8], app: AppConfiguration) async -> DeliveryOutcome {
        await withCheckedContinuation { continuation in
            start(body, app: app, placed: false) { continuation.resume(returning: $0) }
        }
    }

    /// No rate of its own: `go(false)` at once.
    public func pace(app: AppConfiguration, urgent: Bool, then go: @escaping @Sendable (_ placed: Bool) -> Void) { go(false) }

    /// `pace`, waited for in the caller's task.
    func pace(app: AppConfiguration, urgent: Bool) async -> Bool {
        await withCheckedContinuation { continuation in pace(app: app, urgent: urgent) { continuation.resume(returning: $0) } }
    }
}

/// The real sender: the FCM HTTP v1 client, with each App ID's service account loaded once.
public final class FCMPushSender: PushSender {
    private let client: FCMClient
    private let accounts: [String: Credentials]

    /// Loads every App ID's credentials (a service account, or Application Default Credentials
    /// from `environment`); a bad file is refused here, at start, by name. Then applies the App
    /// IDs' `rate_limit_per_minute` to their projects (the lowest per project).
    public init(client: FCMClient, registry: AppRegistry,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) {
        self.client = client
        var accounts: [String: Credentials] = [:]
        for appID in registry.appIDs {
            accounts[appID] = try AppConfigurationFile.usableCredentials(registry[appID]!, environment: environment,
                                                                         allowInsecureHTTP: client.configuration.allowInsecureHTTP)
        }
        self.accounts = accounts
        var limits: [String: Int] = [:]
        for app in registry.apps.values {
            if let limit = app.rateLimitPerMinute { limits[app.projectID] = min(limits[app.projectID] ?? limit, limit) }
        }
        client.rateLimiter.setLimits(limits)
    }

    public func start(_ body: [UInt8], app: AppConfiguration, placed: Bool, completion: @escaping @Sendable (DeliveryOutcome) -> Void) {
        guard let account = accounts[app.appID] else {
            return completion(.configurationFailed(ResultError(code: "CONFIGURATION_ERROR", message: "no credentials loaded for app \(app.appID)")))
        }
        client.start(projectID: app.projectID, messageBody: body, credentials: account, placed: placed) { completion(DeliveryOutcome($0)) }
    }

    public func pace(app: AppConfiguration, urgent: Bool, then go: @escaping @Sendable (_ placed: Bool) -> Void) {
        client.pace(projectID: app.projectID, urgent: urgent, then: go)
    }
}

extension DeliveryOutcome {
    /// The core's view of an FCM outcome.
    public init(_ outcome: FCMOutcome) {
        func error(_ f: FCMFailure) -> ResultError { ResultError(code: f.code, httpStatus: f.httpStatus, message: f.message) }
        switch outcome {
        case .sent(let name): self = .sent(messageName: name)
        case .invalidToken(let f): self = .invalidToken(error(f))
        case .rejected(let f): self = .rejected(error(f))
        case .retryable(let f, let after): self = .retryable(error(f), retryAfter: after, overQuota: f.kind == .quotaExceeded)
        case .deferred(let f, let after): self = .deferred(error(f), retryAfter: after)
        case .authFailed(let f): self = .authFailed(error(f))
        case .configurationFailed(let f):
            let fault: ConfigurationFault = switch f.kind {
            case .thirdPartyAuth: .thirdPartyAuth
            case .permissionDenied: .permissionDenied
            default: .other
            }
            self = .configurationFailed(error(f), fault)
        }
    }
}
