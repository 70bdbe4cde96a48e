import AMQP
import FCM
import FoundationEssentials
import PushCore
import ServiceRuntime

/// Options several commands share, declared once, and how they turn into settings.
public enum CommonOptions {
    /// The broker: `--amqp-url URL` (env `PUSH_CONNECTOR_AMQP_URL`); the password comes from the
    /// URL, or `PUSH_CONNECTOR_AMQP_PASSWORD`, or the file named by `PUSH_CONNECTOR_AMQP_PASSWORD_FILE`.
    public static let brokerOptions: [OptionSpec] = [
        .value(.amqpURL, "URL", "broker; keep the password off the command line: PUSH_CONNECTOR_AMQP_PASSWORD,\n"
            + "or PUSH_CONNECTOR_AMQP_PASSWORD_FILE naming a file that holds it",
            default: "amqp://guest@127.0.0.1:5672/%2f",
            ValueKind { $0.hasPrefix("amqp://") || $0.hasPrefix("amqps://") ? nil : "must be an amqp:// or amqps:// URL" },
            secret: true),
        .value(.amqpCAFile, "FILE", "CA bundle for amqps:// (verification is always on)", .readableFile),
        .value(.prefix, "NAME", "topology name prefix", default: "push",
               ValueKind { p in !p.isEmpty && p.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) ? nil : "must be a non-empty name without spaces" }),
        .value(.retryTiers, "LIST", "retry delay tiers in seconds", default: "5,30,120,600,3600",
               ValueKind { retryTiers($0) == nil ? "must be whole seconds from 1 to 4294967 separated by commas" : nil }),
        .value(.heartbeat, "DURATION", "AMQP heartbeat (default 30s, or the URL's ?heartbeat=)", .seconds(0...600)),
    ]

    /// `brokerOptions` for a command that names exchanges and queues but no retry tier (it
    /// declares nothing and publishes no retry copy): `send`, `results`, the `dlq` commands,
    /// `cancel` and `pause`.
    public static let connectionOptions = brokerOptions.filter { $0.id != .retryTiers }
    /// Retention of the results stream, for the commands that declare it (applied when the stream
    /// is created; RabbitMQ refuses to redeclare it with other values).
    public static let resultsRetentionOptions: [OptionSpec] = [
        .value(.resultsMaxAge, "DURATION", "results stream retention by age when it is created (7d, 36h; or RabbitMQ's\nx-max-age: a number and Y, M months, D, h, m or s)",
               default: "7D", ValueKind { DurationText.maxAge($0) == nil ? "must be a duration such as 7d or 36h (or RabbitMQ's 7D, 1M, 1Y)" : nil }),
        .value(.resultsMaxBytes, "N", "results stream retention by size in bytes", default: "20000000000",
               ValueKind { (Int64($0) ?? 0) >= 1_000_000 ? nil : "must be a whole number of bytes, at least 1000000" }),
    ]

    /// FCM: base URL, private CA, concurrency.
    public static let fcmOptions: [OptionSpec] = [
        .value(.fcmURL, "URL", "FCM base URL", default: "https://fcm.googleapis.com", .httpURL),
        .value(.caFile, "FILE", "CA bundle to trust for FCM (e.g. the emulator's dev CA); TLS verification is always on",
               .readableFile),
        .value(.maxInFlight, "N", "FCM requests in flight per process", default: "2000", .integer(1...100_000)),
        .value(.requestTimeout, "DURATION", "longest wait for FCM's answer to one request; a request sent whole that\n"
               + "times out is retried and marked possibly delivered (a token fetch: at most 10 s)", default: "30s", .seconds(1...600)),
        .value(.fcmTransport, "KIND", "HTTP/2 client for FCM sends: nghttp2 (libnghttp2 directly) | curl (libcurl)",
               default: "nghttp2", .choice(FCMTransportKind.allCases.map(\.rawValue))),
        .flag(.allowInsecureHTTP, "allow http:// for --fcm-url and token_uri beyond loopback (127.0.0.0/8, ::1, localhost)"),
    ]

    /// `--log-level`, on every long-running command.
    public static let logLevel = OptionSpec.value(.logLevel, "LEVEL", "debug | info | warn | error", default: "info",
                                                  .choice(["debug", "info", "warn", "warning", "error"]))
    /// `--log-format`: how log lines are written (the logger reads it).
    public static let logFormat = OptionSpec.value(.logFormat, "FORMAT", "text | json", default: "text", .choice(["text", "json"]))
    /// `--check`, on every command: validate, print what would run, connect to nothing. `worker`
    /// and `events` also load their App ID, key, CA and database paths.
    public static let check = OptionSpec.flag(
        .check, "check the options (and for worker / events every file and key they name), print what\n"
            + "would run (secrets redacted) and exit: 0 when it would start, 2 when not; connects to nothing", setting: false)


    /// The broker settings, with the password resolved from the environment.
    public static func brokerSettings(_ a: ParsedArguments, _ context: CommandContext, command: String) throws(UsageError) -> AMQPSettings {
        let url = a[.amqpURL] ?? "amqp://guest@127.0.0.1:5672/%2f"
        var settings: AMQPSettings
        do {
            settings = try AMQPCredentialResolver(environment: context.environment).settings(url: url)
        } catch {
            throw UsageError("\(command): --amqp-url: \(error)")
        }
        if settings.password.isEmpty && settings.user == "guest" { settings.password = "guest" }
        // RabbitMQ's loopback-only guest:guest is no secret; any other password in argv is.
        if a.source(of: .amqpURL) == .commandLine, Self.carriesPassword(url), !(settings.user == "guest" && settings.password == "guest") {
            context.console.err("push-connector \(command): warning: --amqp-url carries a password on the command line, where any "
                + "user of this machine can read it (ps, /proc): use PUSH_CONNECTOR_AMQP_PASSWORD_FILE or PUSH_CONNECTOR_AMQP_PASSWORD")
        }
        if let ca = a[.amqpCAFile] {
            guard settings.tls != nil else { throw UsageError("\(command): --amqp-ca-file needs an amqps:// URL") }
            settings.tls?.caFile = ca
        }
        settings.heartbeatSeconds = a.seconds(.heartbeat) ?? settings.heartbeatSeconds
        return settings
    }

    /// True for `amqp[s]://user:password@…` (a password in the URL's user information).
    package static func carriesPassword(_ url: String) -> Bool {
        let parts = url.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let authority = parts[1].prefix { $0 != "/" && $0 != "?" }
        guard let at = authority.lastIndex(of: "@") else { return false }
        return authority[..<at].contains(":")
    }

    /// The topology named by `--prefix` with the `--retry-tiers`.
    public static func topology(_ a: ParsedArguments, command: String) throws(UsageError) -> Topology {
        let prefix = a[.prefix] ?? "push"
        guard !prefix.isEmpty, prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw UsageError("\(command): --prefix must be a non-empty name without spaces")
        }
        let text = a[.retryTiers] ?? "5,30,120,600,3600"
        guard let tiers = retryTiers(text) else {
            throw UsageError("\(command): --retry-tiers must be whole seconds from 1 to 4294967 separated by commas, got \"\(text)\"")
        }
        var retention = Topology.ResultsRetention()
        if let age = a[.resultsMaxAge] {
            guard let maxAge = DurationText.maxAge(age) else {
                throw UsageError("\(command): --results-max-age must be a duration such as 7d or 36h (or RabbitMQ's 7D, 1M, 1Y), got \"\(age)\"")
            }
            retention.maxAge = maxAge
        }
        if let text = a[.resultsMaxBytes] {
            guard let bytes = Int64(text), bytes >= 1_000_000 else {
                throw UsageError("\(command): --results-max-bytes must be a whole number of bytes, at least 1000000, got \"\(text)\"")
            }
            retention.maxBytes = bytes
            retention.segmentBytes = min(retention.segmentBytes, max(bytes / 10, 1_000_000))
        }
        return Topology(prefix: prefix, retryDelaysSeconds: tiers, resultsRetention: retention)
    }

    /// `5,30,120`: whole seconds, each within RabbitMQ's x-message-ttl (at most 2^32-1 ms).
    package static func retryTiers(_ text: String) -> [Int]? {
        let parsed = text.split(separator: ",").map { Int($0.trimmingWhitespace()) }
        guard !parsed.isEmpty, parsed.allSatisfy({ (1...4_294_967).contains($0 ?? 0) }) else { return nil }
        return parsed.map { $0! }
    }

    /// The FCM client configuration.
    public static func fcmConfiguration(_ a: ParsedArguments, _ context: CommandContext, command: String) throws(UsageError) -> FCMClient.Configuration {
        var c = FCMClient.Configuration()
        c.allowInsecureHTTP = a.has(.allowInsecureHTTP)
        if let url = a[.fcmURL] {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw UsageError("\(command): --fcm-url must be an http:// or https:// URL, got \"\(url)\"")
            }
            if let problem = CleartextPolicy.problem(url: url, allowInsecureHTTP: c.allowInsecureHTTP) {
                throw UsageError("\(command): --fcm-url \"\(url)\": \(problem)")
            }
            c.baseURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        c.transport.caFile = a[.caFile]
        c.transport.maxInFlight = a.int(.maxInFlight) ?? c.transport.maxInFlight
        c.transport.requestTimeout = .seconds(a.seconds(.requestTimeout) ?? 30)
        if let kind = a[.fcmTransport] {
            guard let parsed = FCMTransportKind(rawValue: kind) else {
                throw UsageError("\(command): --fcm-transport must be nghttp2 or curl, got \"\(kind)\"")
            }
            c.transportKind = parsed
        }
        return c
    }

    /// `--log-format` (checked by its declaration, so only `text` or `json` reach here).
    package static func logFormat(_ a: ParsedArguments) -> Logger.Format {
        Logger.Format(rawValue: a[.logFormat] ?? "text") ?? .text
    }

    /// `--log-level`.
    package static func logLevel(_ a: ParsedArguments) -> Logger.Level {
        switch a[.logLevel] ?? "info" {
        case "debug": return .debug
        case "warn", "warning": return .warning
        case "error": return .error
        default: return .info
        }
    }
}
