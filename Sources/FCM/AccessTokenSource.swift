import FoundationEssentials
import Synchronization

/// Hands out OAuth2 access tokens for `Credentials`: one cached token per service-account key or
/// metadata server, refreshed `refreshMargin` before it expires, with a single refresh in flight
/// however many callers wait. A service account's token comes from its `token_uri` (a signed
/// JWT assertion); the metadata server's from a GET with `Metadata-Flavor: Google`.
public actor AccessTokenSource {
    /// An account's refresh in flight and its key's signer; its token lives in `cached`.
    private struct Entry {
        var refresh: Task<AccessToken, any Error>?
        var signer: RSASigner?
    }

    private let transport: any HTTPTransport
    private let refreshMargin: TimeInterval
    private let minimumLifetime: TimeInterval
    private let now: @Sendable () -> Date
    /// Told how each token request ended (metrics, logs).
    private let observer: (any FCMExchangeObserver)?
    private var entries: [String: Entry] = [:]
    /// Each account's current token and when it is refreshed: `refreshMargin` before expiry, or
    /// half-way through its lifetime when that is shorter (so a short-lived token is still
    /// reused). Written by the actor, read without the actor hop (`cachedToken`).
    private nonisolated let cached = Mutex<[String: (token: AccessToken, refreshAt: Date)]>([:])
    /// How many token requests were sent to token endpoints (for metrics and tests).
    public private(set) var fetchCount = 0

    /// - Parameters:
    ///   - refreshMargin: refresh this long before expiry (the Google SDKs use 4–5 minutes).
    ///   - minimumLifetime: a shorter `expires_in` is raised to this (no refresh storms).
    ///   - now: wall clock, injectable for tests.
    public init(transport: any HTTPTransport, refreshMargin: Duration = .seconds(300),
                minimumLifetime: Duration = .seconds(Int64(AccessToken.defaultMinimumLifetime)),
                now: @escaping @Sendable () -> Date = { Date() }, observer: (any FCMExchangeObserver)? = nil) {
        self.transport = transport
        self.observer = observer
        self.refreshMargin = Self.seconds(refreshMargin)
        self.minimumLifetime = Self.seconds(minimumLifetime)
        self.now = now
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// The cached token for `account` when it is not yet due for a refresh (what `token(for:)`
    /// would return at once), read without entering the actor; nil otherwise.
    public nonisolated func cachedToken(for credentials: Credentials) -> AccessToken? {
        guard let current = cached.withLock({ $0[credentials.cacheKey] }), now() < current.refreshAt else { return nil }
        return current.token
    }

    /// A token for `account` that is valid for at least `refreshMargin` (fetching one if needed);
    /// a token shorter-lived than twice the margin is reused for the first half of its life.
    public func token(for credentials: Credentials) async throws(OAuthError) -> AccessToken {
        if let token = cachedToken(for: credentials) { return token }
        let key = credentials.cacheKey
        var entry = entries[key] ?? Entry()
        let refresh: Task<AccessToken, any Error>
        if let running = entry.refresh {
            refresh = running
        } else {
            var signer: RSASigner?
            if case .serviceAccount(let account) = credentials {
                if let existing = entry.signer {
                    signer = existing
                } else {
                    signer = try RSASigner(pem: account.privateKey)
                    entry.signer = signer
                }
            }
            let transport = self.transport
            let now = self.now
            let minimumLifetime = self.minimumLifetime
            let observer = self.observer
            refresh = Task {
                do {
                    let token = try await Self.fetch(credentials, signer: signer, transport: transport,
                                                     minimumLifetime: minimumLifetime, now: now)
                    observer?.tokenFetchFinished(status: 200, cause: "ok")
                    return token
                } catch let error as OAuthError {
                    observer?.tokenFetchFinished(status: error.httpStatus, cause: error.cause)
                    throw error
                }
            }
            entry.refresh = refresh
            entries[key] = entry
            fetchCount += 1
        }
        do {
            let token = try await refresh.value
            if entries[key]?.refresh == refresh {
                let lifetime = token.expiresAt.timeIntervalSince(now())
                let refreshAt = token.expiresAt.addingTimeInterval(-min(refreshMargin, max(lifetime, 0) / 2))
                entries[key]?.refresh = nil
                cached.withLock { $0[key] = (token, refreshAt) }
            }
            return token
        } catch {
            if entries[key]?.refresh == refresh { entries[key]?.refresh = nil }
            throw (error as? OAuthError) ?? .transport("token request failed")
        }
    }

    /// Drops `token` if it is still the cached one for `account` (after a 401 for it), so the
    /// next `token(for:)` fetches a fresh one. Several callers reporting the same stale token
    /// cause one refresh.
    public func invalidate(_ token: AccessToken, for credentials: Credentials) {
        let key = credentials.cacheKey
        cached.withLock { tokens in
            if tokens[key]?.token == token { tokens[key] = nil }
        }
    }

    private static func fetch(_ credentials: Credentials, signer: RSASigner?, transport: any HTTPTransport,
                              minimumLifetime: TimeInterval, now: @Sendable () -> Date) async throws -> AccessToken {
        let request: HTTPRequest
        switch credentials {
        case .serviceAccount(let account):
            let issuedAt = Int64(now().timeIntervalSince1970)
            let assertion = try JWTAssertion(account: account).signed(with: signer!, issuedAt: issuedAt)
            let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
            request = HTTPRequest(url: account.tokenURI,
                                  // "Expect:" off: over HTTP/1.1 libcurl would otherwise wait up to 1 s for a
                                  // 100 Continue before sending the assertion.
                                  headers: ["Content-Type: application/x-www-form-urlencoded", "Expect:"],
                                  body: Array(form.utf8))
        case .metadataServer(let host):
            request = HTTPRequest(url: Credentials.metadataTokenURL(host: host), headers: ["Metadata-Flavor: Google"], body: [],
                                  method: "GET")
        }
        switch await transport.send(request) {
        case .failure(let error) where error.kind == .tls:
            throw OAuthError.untrustedEndpoint(error.message)
        case .failure(let error):
            throw OAuthError.transport(error.code)
        case .success(let response):
            return try AccessToken.parse(httpStatus: response.status, body: response.body, now: now(), retryAfter: response.retryAfter,
                                         minimumLifetime: minimumLifetime)
        }
    }
}
