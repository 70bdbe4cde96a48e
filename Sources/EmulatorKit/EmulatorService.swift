import Foundation
import Synchronization

/// What the emulator answers to each request: routing, auth, faults, validation, recording.
/// Pure of sockets: the HTTP/1.1 and HTTP/2 front ends both call `handle(_:)`.
final class EmulatorService: Sendable {
    let configuration: EmulatorConfiguration
    let store: RecordStore
    let oauth: OAuthTokenEndpoint
    private let flakyFailures = Mutex([String: Int]())
    private let quotaWindows = Mutex([String: (minute: UInt64, count: Int)]())
    private let messageCounter = Atomic<UInt64>(0)
    /// What `/token` answers instead of a token while set (tests of token endpoint outages).
    let tokenFault = Mutex<TokenEndpointFault?>(nil)
    private let idPrefix: String

    init(configuration: EmulatorConfiguration, accounts: [ServiceAccountKey]) {
        self.configuration = configuration
        self.store = RecordStore(capacity: configuration.recordCapacity)
        self.oauth = OAuthTokenEndpoint(accounts: accounts, lifetime: configuration.accessTokenLifetime,
                                        earlyExpiry: configuration.accessTokenEarlyExpiry,
                                        acceptAnySigner: !configuration.requireAuth)
        self.idPrefix = "0:\(UInt64(Date().timeIntervalSince1970 * 1000))%"
    }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let path = request.path
        if path.hasPrefix("/v1/projects/"), path.hasSuffix("/messages:send") {
            let project = path.dropFirst("/v1/projects/".count).dropLast("/messages:send".count)
            guard !project.isEmpty, !project.contains("/") else { return .error(.notFound("Requested entity was not found.")) }
            guard request.method == "POST" else { return .error(.methodNotAllowed()) }
            return send(project: String(project), request: request)
        }
        switch (request.method, path) {
        case ("POST", "/token"): return token(request)
        case ("GET", "/computeMetadata/v1/instance/service-accounts/default/token") where configuration.metadataServer:
            return metadataToken(request)
        case ("GET", "/_emulator/messages"): return listMessages(request.query)
        case ("DELETE", "/_emulator/messages"):
            store.clear()
            return .json(200, "{}")
        case ("GET", "/_emulator/stats"): return .json(200, store.stats().json)
        case ("GET", "/_emulator/health"), ("GET", "/"): return .json(200, "{\"status\":\"ok\"}")
        case (_, "/token"), (_, "/_emulator/messages"), (_, "/_emulator/stats"): return .error(.methodNotAllowed())
        default: return .frontEndNotFound(path: String(path))
        }
    }

    // MARK: messages:send

    private func send(project: String, request: HTTPRequest) -> HTTPResponse {
        var slowMilliseconds = 0
        var cut = false
        var response = decideSend(project: project, request: request, slowMilliseconds: &slowMilliseconds, cut: &cut)
        response.cut = cut && response.status == 200
        let share = configuration.latencyShare
        let delayed = share >= 1 || (share > 0 && Double.random(in: 0..<1) < share)
        response.delay = (delayed ? configuration.latency.sample() : .zero) + .milliseconds(slowMilliseconds)
        return response
    }

    private func decideSend(project: String, request: HTTPRequest, slowMilliseconds: inout Int, cut: inout Bool) -> HTTPResponse {
        func fail(_ error: FCMError) -> HTTPResponse {
            store.count(project: project, outcome: error.outcome)
            return .error(error)
        }
        if configuration.requireAuth, !oauth.isAuthorized(request.header("authorization")) {
            return fail(.unauthenticated())
        }
        if let quota = configuration.quotaPerMinute, !takeQuota(project: project, limit: quota) {
            return fail(.quotaExceeded(retryAfter: secondsToNextMinute()))
        }
        let valid: MessageValidator.ValidSend
        do { valid = try MessageValidator.validate(body: request.body) } catch { return fail(error) }
        if case .token(let token) = valid.target, let fault = TokenFault.parse(token: token) {
            switch fault {
            case .error(let kind): return fail(kind.error(retryAfter: configuration.retryAfterSeconds))
            case .flaky(let times):
                if failsAgain(token, times: times) { return fail(.unavailable(retryAfter: configuration.retryAfterSeconds)) }
            case .quotaTimes(let times):
                if failsAgain(token, times: times) { return fail(.quotaExceeded(retryAfter: configuration.retryAfterSeconds)) }
            case .slow(let ms): slowMilliseconds = ms
            case .slowOnce(let ms): if failsAgain(token, times: 1) { slowMilliseconds = ms }
            case .cutAnswer: cut = true
            }
        }
        for (kind, rate) in configuration.errorRates where rate > 0 && Double.random(in: 0..<1) < rate {
            return fail(kind.error(retryAfter: configuration.retryAfterSeconds))
        }
        if valid.validateOnly {
            store.count(project: project, outcome: "validated")
            return .json(200, "{\"name\":\"projects/\(project)/messages/fake_message_id\"}")
        }
        let sequence = messageCounter.add(1, ordering: .relaxed).newValue
        let name = "projects/\(project)/messages/\(idPrefix)\(String(sequence, radix: 16))"
        var token: String?, topic: String?, condition: String?
        switch valid.target {
        case .token(let t): token = t
        case .topic(let t): topic = t
        case .condition(let c): condition = c
        }
        var recorded = RecordedMessage(project: project, name: name, token: token, topic: topic, condition: condition,
                                       messageJSON: String(decoding: valid.messageJSON, as: UTF8.self))
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        recorded.receivedAtMillis = Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
        store.record(recorded)
        return .json(200, "{\"name\":\(JSONValue.quoted(name))}")
    }

    /// True for the first `times` sends of `token` (counted per token).
    private func failsAgain(_ token: String, times: Int) -> Bool {
        flakyFailures.withLock { counts -> Bool in
            let n = counts[token, default: 0]
            guard n < times else { return false }
            counts[token] = n + 1
            return true
        }
    }

    private func takeQuota(project: String, limit: Int) -> Bool {
        let minute = UInt64(Date().timeIntervalSince1970 / 60)
        return quotaWindows.withLock { windows in
            var window = windows[project] ?? (minute, 0)
            if window.minute != minute { window = (minute, 0) }
            guard window.count < limit else { return false }
            window.count += 1
            windows[project] = window
            return true
        }
    }

    private func secondsToNextMinute() -> Int {
        let t = Date().timeIntervalSince1970
        return max(configuration.retryAfterSeconds, Int((60 - t.truncatingRemainder(dividingBy: 60)).rounded(.up)))
    }

    // MARK: /token and inspection

    private func token(_ request: HTTPRequest) -> HTTPResponse {
        if let fault = tokenFault.withLock({ $0 }) {
            store.countTokenFault()
            return fault.response
        }
        do {
            let body = try oauth.exchange(formBody: request.body)
            store.countToken(issued: true)
            return .json(200, body, extraHeaders: [("cache-control", "no-cache, no-store, max-age=0, must-revalidate")])
        } catch {
            store.countToken(issued: false)
            return .json(error.status, error.body)
        }
    }

    /// The metadata server's answer: a token for the attached service account, to a request
    /// that says `Metadata-Flavor: Google` (403 otherwise, as the real one answers).
    private func metadataToken(_ request: HTTPRequest) -> HTTPResponse {
        guard request.header("metadata-flavor") == "Google" else {
            store.countToken(issued: false)
            return HTTPResponse(status: 403, headers: [("content-type", "text/html; charset=UTF-8")],
                                body: Array("Missing required header: Metadata-Flavor".utf8))
        }
        if let fault = tokenFault.withLock({ $0 }) {
            store.countTokenFault()
            return fault.response
        }
        store.countToken(issued: true)
        return .json(200, oauth.issue(), extraHeaders: [("metadata-flavor", "Google")])
    }

    private func listMessages(_ query: [String: String]) -> HTTPResponse {
        let project = query["project"], token = query["token"]
        let items = store.messages().filter { m in
            (project == nil || m.project == project) && (token == nil || m.token == token)
        }.map { m -> String in
            var text = "{\"project\":\(JSONValue.quoted(m.project)),\"name\":\(JSONValue.quoted(m.name))"
            if let t = m.token { text += ",\"token\":\(JSONValue.quoted(t))" }
            if let t = m.topic { text += ",\"topic\":\(JSONValue.quoted(t))" }
            if let c = m.condition { text += ",\"condition\":\(JSONValue.quoted(c))" }
            return text + ",\"received_at_ms\":\(m.receivedAtMillis),\"message\":\(m.messageJSON)}"
        }
        return .json(200, "{\"messages\":[\(items.joined(separator: ","))]}")
    }
}
