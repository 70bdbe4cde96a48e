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
        /// Sends in flight a project starts with (`ProjectConcurrency`): its limit grows from there
        /// while it answers within `promptAnswer`, and halves with each slower answer.
        public var projectInitialInFlight = 64
        /// An answer slower than this, or this long with sends in flight and no answer, makes a
        /// project slow: its sends over its limit are deferred to a retry tier.
        public var promptAnswer: Duration = .milliseconds(500)
        /// Told about every send request (metrics); nil: nobody watches.
        public var observer: (any FCMExchangeObserver)?
        public init() {}
    }

    public let configuration: Configuration
    public let tokens: AccessTokenSource
    public let rateLimiter: ProjectRateLimiter
    /// The sends of each project waiting for their turn at its rate (`pace`).
    let pacing: PacingLine
    /// Each project's sends in flight, bounded by how fast it answers.
    public let concurrency: ProjectConcurrency
    private let transport: any HTTPTransport
    /// Shut down by `shutdown()`: the transports this client made.
    private let ownedShutdowns: [@Sendable () -> Void]
    /// `messages:send` URLs by project id, built once.
    private let sendURLs = Mutex<[String: String]>([:])

    /// A client with its own transports: `transportKind` for sends, libcurl for access tokens.
    public convenience init(configuration: Configuration = Configuration()) {
        switch configuration.transportKind {
        case .curl:
            let sends = CurlTransport(configuration: configuration.transport)
            let tokens = CurlTransport(configuration: Self.tokenTransportConfiguration(configuration.transport))
            self.init(configuration: configuration, transport: sends, tokenTransport: tokens,
                      owned: [{ sends.shutdown() }, { tokens.shutdown() }])
        case .nghttp2:
            let sends = H2Transport(configuration: configuration.transport)
            let tokens = CurlTransport(configuration: Self.tokenTransportConfiguration(configuration.transport))
            self.init(configuration: configuration, transport: sends, tokenTransport: tokens,
                      owned: [{ sends.shutdown() }, { tokens.shutdown() }])
        }
    }

    /// The token fetches' transport: few requests in flight, HTTP/1.1 for an `http://`
    /// token endpoint (a local or test one; Google's is https, negotiated by ALPN), and at most
    /// `longestTokenFetch` per fetch: a token endpoint that hangs pauses its project (and lets a
    /// worker stop) that soon, not after a send's whole `--request-timeout`.
    private static func tokenTransportConfiguration(_ sends: CurlTransportConfiguration) -> CurlTransportConfiguration {
        var tokens = sends
        tokens.maxInFlight = min(tokens.maxInFlight, 64)
        tokens.requestTimeout = min(tokens.requestTimeout, longestTokenFetch)
        tokens.cleartextHTTP2 = false
        return tokens
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
                                   minimumLifetime: configuration.minimumTokenLifetime, observer: configuration.observer)
        rateLimiter = ProjectRateLimiter(configuration: configuration.rateLimit)
        pacing = PacingLine(limiter: rateLimiter)
        var tuning = ProjectLoad.Tuning()
        tuning.maximum = max(1, configuration.transport.maxInFlight)
        tuning.initial = max(1, configuration.projectInitialInFlight)
        tuning.floor = min(tuning.floor, tuning.initial)
        tuning.promptAnswer = configuration.promptAnswer
        concurrency = ProjectConcurrency(tuning: tuning)
        if let observer = configuration.observer {
            concurrency.onChange { project, slow, limit in observer.projectSlowChanged(project, slow: slow, limit: limit) }
        }
    }

    /// The longest a token fetch may take (Google's endpoint answers within a second).
    public static let longestTokenFetch: Duration = .seconds(10)

    /// The code of a send held back before it left this process: the project is paused (429,
    /// configuration failure) or over its rate; it never reached FCM.
    public static let projectPausedCode = "PROJECT_PAUSED"

    /// Stops the owned transports; sends still in flight finish as retryable.
    public func shutdown() { for stop in ownedShutdowns { stop() } }

    /// `start`, waited for in the caller's task: sends one request body `{"message": …,
    /// "validate_only": …}` for `projectID` and returns its outcome.
    public func send(projectID: String, messageBody: [UInt8], credentials: Credentials) async -> FCMOutcome {
        await withCheckedContinuation { continuation in
            start(projectID: projectID, messageBody: messageBody, credentials: credentials) { continuation.resume(returning: $0) }
        }
    }

    /// Takes the turn of a send of `projectID` at its project's rate before the caller spends
    /// anything on it, and calls `go` once it may start (from any thread; at once on this one
    /// when it may start now): `go(true)` when its turn is taken (start it with `placed: true`),
    /// `go(false)` when none was (`start` decides, and defers it). A send over the rate waits
    /// in its project's line (`PacingLine`) without a task and without a permit of the
    /// caller's, instead of going through a retry tier. An `urgent` send (a high-priority job)
    /// takes the project's next turn ahead of that line.
    public func pace(projectID: String, urgent: Bool = false, then go: @escaping @Sendable (_ placed: Bool) -> Void) {
        pacing.enter(project: projectID, urgent: urgent, go: go)
    }

    /// Sends one request body `{"message": …, "validate_only": …}` for `projectID` and gives its
    /// outcome to `completion` (from any thread), once the project has room for it in flight (a
    /// slow project's send over its limit is deferred, `PROJECT_SLOW`). In the common case (the
    /// project not paced, the access token cached, a transport permit free) nothing waits as a task while FCM answers:
    /// the request in flight costs its callbacks. Any other case, and a resend (connection loss,
    /// a 401), goes on in a task (`exchange`).
    ///
    /// `placed`: the send's turn at its project's rate was taken by `pace`; it is not taken again,
    /// and the send is deferred only if the project was paused meanwhile.
    public func start(projectID: String, messageBody: [UInt8], credentials: Credentials, placed: Bool = false,
                      completion: @escaping @Sendable (FCMOutcome) -> Void) {
        if let refused = Self.refusal(projectID: projectID) { return completion(refused) }
        let exchange = newExchange(projectID, messageBody, credentials)
        switch placed ? .now(rateLimiter.turnKept(project: projectID)) : rateLimiter.decide(project: projectID) {
        case .now(.deferred(let delay)):
            return completion(Self.paused(projectID, retryAfter: delay))
        case .paced(let delay):
            Task {
                if case .deferred(let pause) = await rateLimiter.waitOut(delay, project: projectID) {
                    return completion(Self.paused(projectID, retryAfter: pause))
                }
                self.admit(exchange, completion: completion)
            }
        case .now(.granted):
            admit(exchange, completion: completion)
        }
    }

    /// Sends `exchange` once its project has room for one more send in flight
    /// (`ProjectConcurrency`), timing it for the project's limit; a slow project's send over its
    /// limit is deferred instead (`PROJECT_SLOW`).
    private func admit(_ exchange: Exchange, completion: @escaping @Sendable (FCMOutcome) -> Void) {
        let project = exchange.projectID
        concurrency.enter(project: project) { decision in
            guard case .go = decision else {
                if case .deferred(let wait) = decision { completion(self.slow(project, retryAfter: wait)) }
                return
            }
            let started = ContinuousClock.now
            self.sendNow(exchange) { outcome in
                self.concurrency.leave(project: project, after: ContinuousClock.now - started)
                completion(outcome)
            }
        }
    }

    /// Sends `exchange`: from the caller's thread when the access token is cached (nothing waits
    /// as a task while FCM answers), in a task otherwise and for a resend.
    private func sendNow(_ exchange: Exchange, completion: @escaping @Sendable (FCMOutcome) -> Void) {
        guard let token = tokens.cachedToken(for: exchange.credentials) else {
            Task { completion(await self.exchange(exchange)) }
            return
        }
        configuration.observer?.exchangeStarted()
        let started = ContinuousClock.now
        transport.start(exchange.request(token)) { answer in
            var exchange = exchange
            switch self.step(after: answer, token: token, started: started, exchange: &exchange) {
            case .done(let outcome): completion(outcome)
            case .again: Task { completion(await self.exchange(exchange)) }
            case .againWithNewToken:
                Task {
                    await self.tokens.invalidate(token, for: exchange.credentials)
                    completion(await self.exchange(exchange))
                }
            }
        }
    }

    /// One send's request and what it may still do: resend after a connection loss, refresh
    /// the token after a 401.
    private struct Exchange: Sendable {
        let projectID: String
        let url: String
        let body: [UInt8]
        let credentials: Credentials
        var refreshedAfter401 = false
        var resendsLeft: Int

        init(projectID: String, url: String, body: [UInt8], credentials: Credentials, resends: Int) {
            (self.projectID, self.url, self.body, self.credentials, resendsLeft) = (projectID, url, body, credentials, resends)
        }

        func request(_ token: AccessToken) -> HTTPRequest { HTTPRequest(url: url, headers: token.sendHeaders, body: body) }
    }

    private func newExchange(_ projectID: String, _ body: [UInt8], _ credentials: Credentials) -> Exchange {
        Exchange(projectID: projectID, url: sendURL(projectID), body: body, credentials: credentials,
                 resends: configuration.resendsAfterConnectionLoss)
    }

    /// What an answer leads to.
    private enum Step {
        case done(FCMOutcome)
        /// Resend at once (the connection went away before any answer).
        case again
        /// Invalidate the token, then resend (a 401 for our own token, once).
        case againWithNewToken
    }

    /// Sends `exchange` until an answer settles it (the resend rules of `step`).
    private func exchange(_ exchange: Exchange) async -> FCMOutcome {
        var exchange = exchange
        while true {
            let token: AccessToken
            if let cached = tokens.cachedToken(for: exchange.credentials) {
                token = cached  // the common case: no hop to the token source's actor
            } else {
                do {
                    token = try await tokens.token(for: exchange.credentials)
                } catch {
                    return deferring(after: error, projectID: exchange.projectID)
                }
            }
            configuration.observer?.exchangeStarted()
            let started = ContinuousClock.now
            let answer = await transport.send(exchange.request(token))
            switch step(after: answer, token: token, started: started, exchange: &exchange) {
            case .done(let outcome): return outcome
            case .again: continue
            case .againWithNewToken: await tokens.invalidate(token, for: exchange.credentials)
            }
        }
    }

    /// Reads one answer: tells the observer, decodes, and decides between an outcome and a resend.
    private func step(after answer: Result<HTTPResponse, TransportError>, token: AccessToken, started: ContinuousClock.Instant,
                      exchange: inout Exchange) -> Step {
        if let observer = configuration.observer {
            observer.exchangeFinished(status: try? answer.get().status, duration: ContinuousClock.now - started)
        }
        switch answer {
        case .failure(let error):
            if exchange.resendsLeft > 0, error.kind == .connectionLost || error.kind == .connectFailed {
                exchange.resendsLeft -= 1
                return .again
            }
            if error.kind == .tls {
                // Every send of the project would fail the same way until the setup is fixed.
                let failure = FCMFailure(code: error.code, httpStatus: nil, message: error.message)
                return .done(deferring(failure, reason: .tls, projectID: exchange.projectID))
            }
            return .done(Self.outcome(for: error))
        case .success(let response):
            let outcome = FCMResponseDecoder.decode(httpStatus: response.status, body: response.body, retryAfter: response.retryAfter)
            switch outcome {
            case .authFailed where !exchange.refreshedAfter401:
                exchange.refreshedAfter401 = true
                return .againWithNewToken
            case .retryable(let failure, let retryAfter) where failure.kind == .quotaExceeded:
                rateLimiter.recordQuotaExceeded(project: exchange.projectID, retryAfter: retryAfter)
                return .done(outcome)
            default:
                return .done(pausingOnConfigurationFailure(outcome, projectID: exchange.projectID))
            }
        }
    }

    /// The outcome of a project id that is not one (nothing is sent); nil when it is one.
    private static func refusal(projectID: String) -> FCMOutcome? {
        guard !isValidProjectID(projectID) else { return nil }
        return .configurationFailed(FCMFailure(code: "INVALID_PROJECT_ID", httpStatus: nil,
                                               message: "project id \"\(projectID.prefix(64))\" is not a Firebase project id"))
    }

    /// The code of a send held back because its project answers slowly and has its limit of
    /// sends in flight (`ProjectConcurrency`); it never reached FCM.
    public static let projectSlowCode = "PROJECT_SLOW"

    /// The outcome of a send held back because `projectID` answers slowly.
    private func slow(_ projectID: String, retryAfter delay: Duration) -> FCMOutcome {
        let (inFlight, _, _) = concurrency.state(project: projectID)
        return .deferred(FCMFailure(code: Self.projectSlowCode, httpStatus: nil,
                                    message: "project \(projectID) answers slowly: \(inFlight) sends in flight, this one waits in a retry tier"),
                         retryAfter: delay)
    }

    /// The outcome of a send held back because `projectID` is paused or over its rate.
    private static func paused(_ projectID: String, retryAfter delay: Duration) -> FCMOutcome {
        .deferred(FCMFailure(code: projectPausedCode, httpStatus: nil, message: "project \(projectID) is paused or over its send quota"),
                  retryAfter: delay)
    }

    /// A token the send could not get: the project pauses (a refusal as `auth`, an outage as
    /// `token` for at least its Retry-After, an untrusted endpoint as `tls`) and the send waits.
    /// Token refusals are not verdicts on the message, so they never dead-letter it at once:
    /// it waits in the retry tiers, without using an attempt, until the setup is fixed or
    /// `--max-age` runs out.
    private func deferring(after error: OAuthError, projectID: String) -> FCMOutcome {
        let failure: FCMFailure
        let reason: ProjectRateLimiter.PauseReason
        switch error.disposition {
        case .credentials:
            (failure, reason) = (FCMFailure(code: "OAUTH_REFUSED", httpStatus: error.httpStatus, message: error.description), .auth)
        case .transient:
            (failure, reason) = (FCMFailure(code: "OAUTH_UNAVAILABLE", httpStatus: error.httpStatus, message: error.description), .token)
        case .configuration:
            (failure, reason) = (FCMFailure(code: "OAUTH_TLS", httpStatus: nil, message: error.description), .tls)
        }
        let length = error.retryAfter.map { max($0, configuration.rateLimit.tokenOutagePause) }
        return deferring(failure, reason: reason, projectID: projectID, for: length)
    }

    /// Pauses `projectID` for a fault of the setup (telling the observer when the pause starts)
    /// and defers the send that met it until the pause ends.
    private func deferring(_ failure: FCMFailure, reason: ProjectRateLimiter.PauseReason, projectID: String,
                           for length: Duration? = nil) -> FCMOutcome {
        if rateLimiter.recordSetupFault(project: projectID, reason: reason, for: length) {
            configuration.observer?.projectPaused(projectID, reason: reason, cause: failure,
                                                  for: rateLimiter.pauseRemaining(project: projectID))
        }
        return .deferred(failure, retryAfter: rateLimiter.pauseRemaining(project: projectID))
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
        let reason: ProjectRateLimiter.PauseReason
        switch outcome {
        case .authFailed: reason = .auth
        case .configurationFailed(let failure) where failure.kind == .unexpectedResponse: reason = .config
        default: return outcome
        }
        if rateLimiter.recordSetupFault(project: projectID, reason: reason), let failure = outcome.failure {
            configuration.observer?.projectPaused(projectID, reason: reason, cause: failure,
                                                  for: rateLimiter.pauseRemaining(project: projectID))
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

    /// Firebase project ids: lower-case letters, digits and hyphens (plus `domain:` prefixes).
    static func isValidProjectID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 100 && id.utf8.allSatisfy {
            ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E || $0 == 0x3A || $0 == 0x5F
        }
    }
}
