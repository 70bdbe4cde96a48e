import Foundation
import AMQP
import FCM
import PushCore

/// Options several commands share, and how each is resolved: flag, then environment, then default.
public enum CommonOptions {
    /// `--amqp-url URL` (env `PUSH_CONNECTOR_AMQP_URL`); the password comes from the URL, or
    /// `PUSH_CONNECTOR_AMQP_PASSWORD`, or the file named by `PUSH_CONNECTOR_AMQP_PASSWORD_FILE`.
    public static let broker: Set<String> = ["--amqp-url", "--amqp-ca-file", "--prefix", "--retry-tiers", "--heartbeat"]
    /// Retention of the results stream, for the commands that declare it.
    public static let resultsRetention: Set<String> = ["--results-max-age", "--results-max-bytes"]
    /// `--fcm-url URL` (env `PUSH_CONNECTOR_FCM_URL`), `--ca-file FILE` (a private CA for FCM).
    public static let fcm: Set<String> = ["--fcm-url", "--ca-file", "--max-in-flight"]
    /// `--allow-insecure-http`: plain HTTP to FCM and token endpoints beyond loopback.
    public static let fcmFlags: Set<String> = ["--allow-insecure-http"]

    public static let brokerUsage = """
          --amqp-url URL        broker (env PUSH_CONNECTOR_AMQP_URL; default amqp://guest@127.0.0.1:5672/%2f);
                                password from the URL, PUSH_CONNECTOR_AMQP_PASSWORD or PUSH_CONNECTOR_AMQP_PASSWORD_FILE
          --amqp-ca-file FILE   CA bundle for amqps:// (verification is always on)
          --prefix NAME         topology name prefix (default push)
          --retry-tiers LIST    retry delay tiers in seconds (default 5,30,120,600,3600)
          --heartbeat SECONDS   AMQP heartbeat (default 30)
        """

    public static let resultsRetentionUsage = """
          --results-max-age AGE results stream retention by age when it is created: a number and
                                Y, M, D, h, m or s (default 7D)
          --results-max-bytes N results stream retention by size in bytes (default 20000000000)
        """

    public static let fcmUsage = """
          --fcm-url URL         FCM base URL (env PUSH_CONNECTOR_FCM_URL; default https://fcm.googleapis.com)
          --ca-file FILE        CA bundle to trust for FCM (e.g. the emulator's dev CA); TLS verification is always on
          --max-in-flight N     FCM requests in flight per process (default 1000)
          --allow-insecure-http allow http:// for --fcm-url and token_uri beyond loopback (127.0.0.0/8, ::1, localhost)
        """

    /// The broker settings, with the password resolved from the environment.
    public static func brokerSettings(_ a: ParsedArguments, _ context: CommandContext, command: String) throws(UsageError) -> AMQPSettings {
        let url = a.value("--amqp-url") ?? context.environment["PUSH_CONNECTOR_AMQP_URL"] ?? "amqp://guest@127.0.0.1:5672/%2f"
        var settings: AMQPSettings
        do {
            settings = try AMQPCredentialResolver(environment: context.environment).settings(url: url)
        } catch {
            throw UsageError("\(command): --amqp-url: \(error)")
        }
        if settings.password.isEmpty && settings.user == "guest" { settings.password = "guest" }
        if let ca = a.value("--amqp-ca-file") {
            guard settings.tls != nil else { throw UsageError("\(command): --amqp-ca-file needs an amqps:// URL") }
            settings.tls?.caFile = ca
        }
        settings.heartbeatSeconds = try a.integer("--heartbeat", in: command, default: settings.heartbeatSeconds, range: 0...600)
        return settings
    }

    /// The topology named by `--prefix` with the `--retry-tiers`.
    public static func topology(_ a: ParsedArguments, command: String) throws(UsageError) -> Topology {
        let prefix = a.value("--prefix") ?? "push"
        guard !prefix.isEmpty, prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw UsageError("\(command): --prefix must be a non-empty name without spaces")
        }
        var tiers = [5, 30, 120, 600, 3600]
        if let text = a.value("--retry-tiers") {
            let parsed = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            // RabbitMQ's x-message-ttl is at most 2^32-1 ms.
            guard !parsed.isEmpty, parsed.allSatisfy({ (1...4_294_967).contains($0 ?? 0) }) else {
                throw UsageError("\(command): --retry-tiers must be whole seconds from 1 to 4294967 separated by commas, got \"\(text)\"")
            }
            tiers = parsed.map { $0! }
        }
        var retention = Topology.ResultsRetention()
        if let age = a.value("--results-max-age") {
            guard Topology.ResultsRetention.isValidMaxAge(age) else {
                throw UsageError("\(command): --results-max-age must be a whole number and one of Y, M, D, h, m, s (e.g. 7D, 36h), got \"\(age)\"")
            }
            retention.maxAge = age
        }
        if let text = a.value("--results-max-bytes") {
            guard let bytes = Int64(text), bytes >= 1_000_000 else {
                throw UsageError("\(command): --results-max-bytes must be a whole number of bytes, at least 1000000, got \"\(text)\"")
            }
            retention.maxBytes = bytes
            retention.segmentBytes = min(retention.segmentBytes, max(bytes / 10, 1_000_000))
        }
        return Topology(prefix: prefix, retryDelaysSeconds: tiers, resultsRetention: retention)
    }

    /// The FCM client configuration.
    public static func fcmConfiguration(_ a: ParsedArguments, _ context: CommandContext, command: String) throws(UsageError) -> FCMClient.Configuration {
        var c = FCMClient.Configuration()
        c.allowInsecureHTTP = a.has("--allow-insecure-http")
        if let url = a.value("--fcm-url") ?? context.environment["PUSH_CONNECTOR_FCM_URL"] {
            guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                throw UsageError("\(command): --fcm-url must be an http:// or https:// URL, got \"\(url)\"")
            }
            if let problem = CleartextPolicy.problem(url: url, allowInsecureHTTP: c.allowInsecureHTTP) {
                throw UsageError("\(command): --fcm-url \"\(url)\": \(problem)")
            }
            c.baseURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        }
        c.transport.caFile = a.value("--ca-file")
        c.transport.maxInFlight = try a.integer("--max-in-flight", in: command, default: 1000, range: 1...100_000)
        return c
    }
}
