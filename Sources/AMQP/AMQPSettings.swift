import FoundationEssentials
import PushCore

/// Where and how to connect to a broker: parsed from `amqp://user:pass@host:port/vhost` or
/// `amqps://…`, or from a comma-separated list of such URLs naming the nodes of one cluster
/// (see `nodes`). `description` is the redacted URL: the password never appears in it.
public struct AMQPSettings: Sendable, Equatable, CustomStringConvertible {
    /// One node of a cluster: where to open the socket. User, password, vhost and the other
    /// settings are shared by every node.
    public struct Node: Sendable, Equatable, Hashable {
        public var host: String
        public var port: Int
        public var tls: TLS?

        public init(host: String, port: Int, tls: TLS?) {
            self.host = host
            self.port = port
            self.tls = tls
        }
    }

    /// TLS options for `amqps://`. Peer and hostname verification are ON unless switched off.
    public struct TLS: Sendable, Equatable, Hashable {
        /// PEM bundle of trusted CAs; nil uses OpenSSL's default store.
        public var caFile: String?
        /// Verify the broker certificate chain.
        public var verifyPeer: Bool
        /// Verify that the certificate names `host`.
        public var verifyHostname: Bool

        public init(caFile: String? = nil, verifyPeer: Bool = true, verifyHostname: Bool = true) {
            self.caFile = caFile
            self.verifyPeer = verifyPeer
            self.verifyHostname = verifyHostname
        }
    }

    public var host: String
    public var port: Int
    public var vhost: String
    public var user: String
    /// The password; never printed. Empty when none was given (see `AMQPCredentialResolver`).
    public var password: String
    /// Non-nil for `amqps://`.
    public var tls: TLS?
    /// Heartbeat interval in seconds (0 disables heartbeats; the broker may lower it).
    public var heartbeatSeconds: Int
    /// Shown in the broker's management UI and `rabbitmqctl list_connections`.
    public var connectionName: String
    /// Largest frame; 131072 is librabbitmq's default.
    public var frameMax: Int
    /// The nodes after the first (`host`, `port`, `tls`) of a comma-separated URL list.
    public var otherNodes: [Node] = []

    /// Every node to connect to, the first one first: a connection goes to the first node that
    /// answers, and after a lost connection to the next one (`AMQPNodeRotation`).
    public var nodes: [Node] { [Node(host: host, port: port, tls: tls)] + otherNodes }

    public init(host: String = "127.0.0.1", port: Int? = nil, vhost: String = "/", user: String = "guest",
                password: String = "guest", tls: TLS? = nil, heartbeatSeconds: Int = 30,
                connectionName: String = "push-connector", frameMax: Int = 131_072) {
        self.host = host
        self.port = port ?? (tls == nil ? 5672 : 5671)
        self.vhost = vhost
        self.user = user
        self.password = password
        self.tls = tls
        self.heartbeatSeconds = heartbeatSeconds
        self.connectionName = connectionName
        self.frameMax = frameMax
    }

    /// Parses an AMQP URI (RabbitMQ URI spec): user, password, host and vhost are
    /// percent-decoded; a missing vhost path means "/"; `amqps` defaults to port 5671 and TLS with
    /// verification. Query parameters `heartbeat` (seconds) and `cacertfile` are honoured.
    ///
    /// Several URLs separated by commas name the nodes of one cluster. They must agree on the
    /// user, the password (or give it once) and the vhost; the first URL's query parameters
    /// apply to all. A comma inside a user name or password is written `%2C`.
    public init(url: String) throws(AMQPError) {
        let parts = url.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingWhitespace() }
        guard parts.count > 1 else {
            try self.init(singleURL: url)
            return
        }
        guard !parts.contains(where: \.isEmpty) else {
            throw .invalidURL("an empty entry in the comma-separated AMQP URL list")
        }
        // A piece that is no URL means a raw comma inside one (most often in a password): the
        // pieces would be parsed as host:port and quoted in the error, so name neither.
        guard parts.allSatisfy({ $0.hasPrefix("amqp://") || $0.hasPrefix("amqps://") }) else {
            throw .invalidURL("a ',' in the AMQP URL that does not start another amqp:// URL; "
                              + "write a comma inside a user name or password as %2C")
        }
        var first = try AMQPSettings(singleURL: parts[0])
        for part in parts.dropFirst() {
            let other = try AMQPSettings(singleURL: part)
            guard other.user == first.user, other.vhost == first.vhost else {
                throw .invalidURL("every AMQP URL of a list must name the same user and vhost "
                                  + "(\(first.redactedURL) and \(other.redactedURL) differ)")
            }
            if first.password.isEmpty { first.password = other.password }
            guard other.password.isEmpty || other.password == first.password else {
                throw .invalidURL("the AMQP URLs of a list give different passwords; give it once or the same everywhere")
            }
            first.otherNodes.append(Node(host: other.host, port: other.port, tls: other.tls))
        }
        self = first
    }

    private init(singleURL url: String) throws(AMQPError) {
        let scheme: String
        let rest: Substring
        if url.hasPrefix("amqp://") { scheme = "amqp"; rest = url.dropFirst(7) }
        else if url.hasPrefix("amqps://") { scheme = "amqps"; rest = url.dropFirst(8) }
        else { throw .invalidURL("the URL must start with amqp:// or amqps:// (got \(Self.redact(url)))") }

        // A user name or password with an unencoded `/`, `?` or `#` would split the URL before its
        // `@`, turning part of the password into a host, port or vhost (and into log lines).
        if let cut = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }), rest[cut...].contains("@") {
            throw .invalidURL("ambiguous AMQP URL: an '@' follows a '/', '?' or '#'; percent-encode these characters "
                              + "in the user name and password (%2F, %3F, %23, %40)")
        }
        var authority = rest
        var path: Substring? = nil
        var query: Substring? = nil
        if let q = authority.firstIndex(of: "?") {
            query = authority[authority.index(after: q)...]
            authority = authority[..<q]
        }
        if let slash = authority.firstIndex(of: "/") {
            path = authority[authority.index(after: slash)...]
            authority = authority[..<slash]
        }
        var user = "guest", password = "guest"
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decode(userInfo[..<colon], "user")
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], "password")
            } else {
                user = try Self.decode(userInfo, "user")
                password = ""
            }
        }
        var host = "localhost"
        var port: Int? = nil
        if hostPort.hasPrefix("[") {  // IPv6 literal
            guard let close = hostPort.firstIndex(of: "]") else { throw .invalidURL("unterminated IPv6 host") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { throw .invalidURL("bad port") }
                port = p
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            let portText = hostPort[hostPort.index(after: colon)...]
            guard let p = Int(portText), (1...65535).contains(p) else {
                // Without an '@' the "host:port" may be a user:password cut off by a stray
                // character: quote nothing of it.
                throw .invalidURL(authority.contains("@") ? "bad port in \(Self.redact(url))"
                                  : "bad port (a user name and password need an '@' before the host)")
            }
            port = p
            host = try Self.decode(hostPort[..<colon], "host")
        } else if !hostPort.isEmpty {
            host = try Self.decode(hostPort, "host")
        }
        if host.isEmpty { host = "localhost" }
        var vhost = "/"
        if let path, !path.isEmpty { vhost = try Self.decode(path, "vhost") }

        var tls: TLS? = scheme == "amqps" ? TLS() : nil
        var heartbeat = 30
        for item in (query ?? "").split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(pair[0])
            guard !key.isEmpty else { throw .invalidURL("a query parameter of the AMQP URL has no name") }
            let value = pair.count > 1 ? try Self.decode(pair[1], key) : ""
            switch key {
            case "heartbeat":
                guard let seconds = Int(value), (0...65535).contains(seconds) else { throw .invalidURL("bad heartbeat") }
                heartbeat = seconds
            case "cacertfile": tls?.caFile = value
            default: break
            }
        }
        self.init(host: host, port: port, vhost: vhost, user: user, password: password, tls: tls,
                  heartbeatSeconds: heartbeat)
    }

    /// The URL with the password replaced by `***` (or absent when there is none); for a
    /// cluster, every node's URL, comma-separated.
    public var redactedURL: String {
        nodes.map(redactedURL(of:)).joined(separator: ",")
    }

    /// One node's URL with the password replaced by `***`.
    public func redactedURL(of node: Node) -> String {
        let scheme = node.tls == nil ? "amqp" : "amqps"
        let secret = password.isEmpty ? "" : ":***"
        let vhostPart = vhost == "/" ? "" : Self.encode(vhost)
        let hostPart = node.host.contains(":") ? "[\(node.host)]" : node.host
        return "\(scheme)://\(Self.encode(user))\(secret)@\(hostPart):\(node.port)/\(vhostPart)"
    }

    public var description: String { redactedURL }

    /// Best-effort redaction of a raw URL string that may not even parse.
    /// A password may hold unencoded `/`, `?` or `@`, so everything between the first `:` after
    /// the scheme and the LAST `@` of the whole string is masked; a string without `://` is not
    /// shown at all.
    ///
    /// A comma-separated list is redacted URL by URL, unless one of its pieces is no URL (a raw
    /// comma inside a password split it): then the whole string is masked as one.
    public static func redact(_ url: String) -> String {
        let pieces = url.split(separator: ",", omittingEmptySubsequences: false)
        if pieces.count > 1, pieces.allSatisfy({ $0.contains("://") }) {
            return pieces.map { redactOne(String($0)) }.joined(separator: ",")
        }
        return redactOne(url)
    }

    private static func redactOne(_ url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return url.contains("@") ? "<unparseable AMQP URL>" : url }
        let afterScheme = url[schemeEnd.upperBound...]
        guard let at = afterScheme.lastIndex(of: "@") else { return url }
        guard let colon = afterScheme[..<at].firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    private static func decode(_ text: Substring, _ what: String) throws(AMQPError) -> String {
        guard let decoded = PercentEncoding.decode(text) else {
            throw .invalidURL("bad percent-encoding in the \(what)")
        }
        return decoded
    }

    private static func encode(_ text: String) -> String {
        PercentEncoding.encode(text)
    }
}
