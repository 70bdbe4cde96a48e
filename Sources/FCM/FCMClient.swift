import FoundationEssentials
import Synchronization

/// FCM HTTP v1 client: `send` one composed message and get its classified outcome.
///
/// Per send: wait for the project's rate limiter, get the service account's access token
/// (cached, refreshed ahead of expiry), POST `{base}/v1/projects/{p}/messages:send`, decode.
/// A 401 UNAUTHENTICATED for our own token invalidates it and resends once; a request whose
/// connection went away before any response (GOAWAY, reset, refused connect) is resent at once
/// (up to `resendsAfterConnectionLoss` times, default 2), because FCM did not answer it. That
/// may, rarely, duplicate a notification the server did accept before the connection died; the
/// pipeline is at-least-once anyway. An answer cut after its 2xx status arrived is not such a
/// loss: the transports return it as a response, and it counts as sent. Timeouts are not resent here: they come back as
/// `.retryable` for the caller's backoff. A 429 pauses the whole project in `rateLimiter`; so
/// does (for `rateLimit.configurationPause`) an auth failure or an answer that is not FCM's.
public final class FCMClient: Sendable {
    /// Tunables of the client and its transport.
    public struct Configuration: Sendable {
        /// FCM's base URL; `PUSH_CONNECTOR_FCM_URL` / `--fcm-url` override it.
        public var baseURL: String = "https://fcm.googleapis.com"
        public var transport = CurlTransportConfiguration()
        /// The HTTP/2 client for sends (`--fcm-transport`); token fetches always use libcurl.
        public var transportKind: FCMTransportKind = .nghttp2
        public var rateLimit = ProjectRateLimiter.Configuration()
        /// Immediate resends of a request whose connection went away before any answer (GOAWAY,
        /// reset, refused connect). Such a request was almost always not processed by FCM.
        public var resendsAfterConnectionLoss = 2
        /// Accept `http://` for `baseURL` and service accounts' `token_uri` on non-loopback hosts
        /// (`--allow-insecure-http`). Off: plain HTTP only reaches 127.0.0.0/8, ::1, localhost.
        public var allowInsecureHTTP = false
        /// Refresh access tokens this long before they expire (or half-way through a shorter life).
        public var tokenRefreshMargin: Duration = .seconds(300)
        /// A token endpoint's `expires_in` below this is raised to it, so `expires_in: 0` cannot
        /// make every send fetch a token.
        public var minimumTokenLifetime: Duration = .seconds(60)
        /// Told about every send request (metrics); nil: nobody watches.
        public var observer: (any FCMExchangeObserver)?
        public init() {}
    }

    public let configuration: Configuration
    public let tokens: AccessTokenSource
    public let rateLimiter: ProjectRateLimiter
    private let transport: any HTTPTransport
    /// Shut down by `shutdown()`: the transports this client made.
    private let ownedShutdowns: [@Sendable () -> Void]
    /// `messages:send` URLs by project id, built once.
    private let sendURLs = Mutex<[String: String]>([:])

    /// A client with its own transports: `transportKind` for sends, libcurl for access tokens.
    public convenience init(configuration: Configuration = Configuration()) {
        switch configuration.transportKind {
        case .curl:
            let curl = CurlTransport(configuration: configuration.transport)
            self.init(configuration: configuration, transport: curl, tokenTransport: curl, owned: [{ curl.shutdown() }])
        case .nghttp2:
            let sends = H2Transport(configuration: configuration.transport)
            var tokenConfiguration = configuration.transport
            tokenConfiguration.maxInFlight = min(tokenConfiguration.maxInFlight, 64)
            let tokens = CurlTransport(configuration: tokenConfiguration)
            self.init(configuration: configuration, transport: sends, tokenTransport: tokens,
                      owned: [{ sends.shutdown() }, { tokens.shutdown() }])
        }
    }

    /// A client over any transport, for sends and tokens alike (tests, custom stacks).
    public convenience init(configuration: Configuration, transport: any HTTPTransport) {
        self.init(configuration: configuration, transport: transport, tokenTransport: transport, owned: [])
    }

    private init(configuration: Configuration, transport: any HTTPTransport, tokenTransport: any HTTPTransport,
                 owned: [@Sendable () -> Void]) {
        self.configuration = configuration
        self.transport = transport
        ownedShutdowns = owned
        tokens = AccessTokenSource(transport: tokenTransport, refreshMargin: configuration.tokenRefreshMargin,
                                   minimumLifetime: configuration.minimumTokenLifetime)
        rateLimiter = ProjectRateLimiter(configuration: configuration.rateLimit)
    }

    /// The code of a send held back before it left this process: the project is paused (429,
    /// configuration failure) or over its rate; it never reached FCM.
    public static let projectPausedCode = "PROJECT_PAUSED"

    /// Stops the owned transports; sends still in flight finish as retryable.
    public func shutdown() { for stop in ownedShutdowns { stop() } }

    /// Sends one request body `{"message": …, "validate_only": …}` for `projectID`.
    public func send(projectID: String, messageBody: [UInt8], credentials: ServiceAccount) async -> FCMOutcome {
        guard Self.isValidProjectID(projectID) else {
            return .configurationFailed(FCMFailure(code: "INVALID_PROJECT_ID", httpStatus: nil,
                                                   message: "project id \"\(projectID.prefix(64))\" is not a Firebase project id"))
        }
        if case .deferred(let delay) = await rateLimiter.acquire(project: projectID) {
            return .retryable(FCMFailure(code: Self.projectPausedCode, httpStatus: nil,
                                         message: "project \(projectID) is paused or over its send quota"),
                              retryAfter: delay)
        }
        let url = sendURL(projectID)
        var refreshedAfter401 = false
        var resendsLeft = configuration.resendsAfterConnectionLoss
        while true {
            let token: AccessToken
            if let cached = tokens.cachedToken(for: credentials) {
                token = cached  // the common case: no hop to the token source's actor
            } else {
                do {
                    token = try await tokens.token(for: credentials)
                } catch {
                    return pausingOnConfigurationFailure(Self.outcome(for: error), projectID: projectID)
                }
            }
            let request = HTTPRequest(url: url, headers: token.sendHeaders, body: messageBody)
            configuration.observer?.exchangeStarted()
            let started = ContinuousClock.now
            let answer = await transport.send(request)
            if let observer = configuration.observer {
                observer.exchangeFinished(status: try? answer.get().status, duration: ContinuousClock.now - started)
            }
            switch answer {
            case .failure(let error):
                if resendsLeft > 0, error.kind == .connectionLost || error.kind == .connectFailed {
                    resendsLeft -= 1
                    continue
                }
                return Self.outcome(for: error)
            case .success(let response):
                let outcome = FCMResponseDecoder.decode(httpStatus: response.status, body: response.body,
                                                        retryAfter: response.retryAfter)
                switch outcome {
                case .authFailed where !refreshedAfter401:
                    refreshedAfter401 = true
                    await tokens.invalidate(token, for: credentials)
                    continue
                case .retryable(_, let retryAfter) where response.status == 429:
                    rateLimiter.recordQuotaExceeded(project: projectID, retryAfter: retryAfter)
                    return outcome
                default:
                    return pausingOnConfigurationFailure(outcome, projectID: projectID)
                }
            }
        }
    }

    private func sendURL(_ projectID: String) -> String {
        sendURLs.withLock { urls in
            if let url = urls[projectID] { return url }
            let url = configuration.baseURL + "/v1/projects/" + projectID + "/messages:send"
            if urls.count < 10_000 { urls[projectID] = url }
            return url
        }
    }

    /// Pauses the project when every further send of it would fail the same way: our
    /// credentials refused, or a non-FCM answer (wrong URL, proxy page).
    private func pausingOnConfigurationFailure(_ outcome: FCMOutcome, projectID: String) -> FCMOutcome {
        switch outcome {
        case .authFailed:
            rateLimiter.recordConfigurationFailure(project: projectID, reason: .auth)
        case .configurationFailed(let failure) where failure.code == FCMResponseDecoder.unexpectedResponseCode:
            rateLimiter.recordConfigurationFailure(project: projectID, reason: .config)
        default:
            break
        }
        return outcome
    }

    static func outcome(for error: TransportError) -> FCMOutcome {
        let failure = FCMFailure(code: error.code, httpStatus: nil, message: error.message)
        switch error.kind {
        case .tls: return .configurationFailed(failure)
        default: return .retryable(failure, retryAfter: nil)
        }
    }

    static func outcome(for error: OAuthError) -> FCMOutcome {
        switch error.disposition {
        case .credentials:
            return .authFailed(FCMFailure(code: "OAUTH_REFUSED", httpStatus: error.httpStatus, message: error.description))
        case .transient:
            return .retryable(FCMFailure(code: "OAUTH_UNAVAILABLE", httpStatus: error.httpStatus, message: error.description),
                              retryAfter: nil)
        case .configuration:
            return .configurationFailed(FCMFailure(code: "OAUTH_TLS", httpStatus: nil, message: error.description))
        }
    }

    /// Firebase project ids: lower-case letters, digits and hyphens (plus `domain:` prefixes).
    static func isValidProjectID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 100 && id.utf8.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E || $0 == 0x3A || $0 == 0x5F
        }
    }
}
