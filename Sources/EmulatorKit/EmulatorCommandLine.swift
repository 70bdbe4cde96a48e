/// What the `fcm-emulator` command line asks for.
public enum EmulatorCommand: Equatable, Sendable {
    case serve(EmulatorConfiguration)
    case makeServiceAccount(project: String, email: String, tokenURI: String, output: String)
    case help
}

/// A command-line mistake: one line for stderr, exit status 2.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

/// Parses `fcm-emulator` arguments (no outside argument-parser package).
public enum EmulatorCommandLine {
    public static let usage = """
    usage: fcm-emulator [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE] [--service-account FILE]...
                        [--no-auth] [--token-lifetime S] [--token-expire-early S] [--retry-after S]
                        [--latency MS|MIN-MAX] [--latency-share P] [--error-rate KIND=P]... [--quota-per-minute N]
                        [--goaway-every N] [--record N] [--max-streams N] [--metadata-server]
           fcm-emulator make-service-account --project P [--email E] --token-uri URL --out FILE
           fcm-emulator --help

    A local FCM HTTP v1 + OAuth2 emulator. Without TLS flags it serves HTTP/2 cleartext (prior
    knowledge) and HTTP/1.1 on the same port; it prints "listening on URL" once ready.
      --listen HOST:PORT        default 127.0.0.1:8085 (port 0 picks a free port)
      --no-auth                 messages:send needs no bearer token; /token accepts any well-formed assertion
      --token-lifetime S        expires_in of issued access tokens (default 3600)
      --token-expire-early S    fault: access tokens stop working after S seconds
      --latency MS|MIN-MAX      added delay of every send answer, fixed or uniform
      --latency-share P         only a fraction P (0...1) of send answers get --latency (default 1)
      --error-rate KIND=P       fault: probability P of KIND on every send; KIND is one of
                                unregistered invalid mismatch quota unavailable internal thirdparty
      --quota-per-minute N      fault: 429 QUOTA_EXCEEDED past N sends per project per minute
      --goaway-every N          fault: GOAWAY an HTTP/2 connection after N requests
      --record N                accepted messages kept for GET /_emulator/messages (default 10000)
      --metadata-server         also serve the GCE/GKE metadata server's token endpoint
                                (GET /computeMetadata/v1/instance/service-accounts/default/token,
                                Metadata-Flavor: Google): run clients with GCE_METADATA_HOST=HOST:PORT
    Token prefixes unregistered invalid mismatch quota unavailable internal thirdparty answer that
    FCM error; flaky<N>-… fails N times with 503; quota<N>-… fails N times with 429 (Retry-After:
    --retry-after); slow<MS>-… answers after MS ms; slowonce<MS>-… answers its first send after
    MS ms, later ones at once; cut-… is accepted and recorded, but its answer is cut after the
    headers and half the body.
    """

    public static func parse(_ arguments: [String]) throws(UsageError) -> EmulatorCommand {
        if arguments.first == "make-service-account" { return try parseMakeServiceAccount(Array(arguments.dropFirst())) }
        var config = EmulatorConfiguration()
        config.port = 8085
        var args = arguments[...]
        func value(_ flag: String) throws(UsageError) -> String {
            guard let v = args.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
            return v
        }
        func integer(_ flag: String, min: Int = 0) throws(UsageError) -> Int {
            let text = try value(flag)
            guard let n = Int(text), n >= min else { throw UsageError(description: "\(flag) needs an integer >= \(min), got \(text)") }
            return n
        }
        while let flag = args.popFirst() {
            switch flag {
            case "--help", "-h": return .help
            case "--listen":
                let text = try value(flag)
                guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
                    throw UsageError(description: "--listen needs HOST:PORT, got \(text)")
                }
                var host = String(text[..<colon])
                if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
                config.host = host.isEmpty ? "0.0.0.0" : host
                config.port = port
            case "--tls-cert": config.tlsCertificateFile = try value(flag)
            case "--tls-key": config.tlsKeyFile = try value(flag)
            case "--service-account": config.serviceAccountFiles.append(try value(flag))
            case "--no-auth": config.requireAuth = false
            case "--token-lifetime": config.accessTokenLifetime = .seconds(try integer(flag, min: 1))
            case "--token-expire-early": config.accessTokenEarlyExpiry = .seconds(try integer(flag))
            case "--retry-after": config.retryAfterSeconds = try integer(flag)
            case "--latency": config.latency = try parseLatency(try value(flag))
            case "--latency-share":
                let text = try value(flag)
                guard let p = Double(text), (0...1).contains(p) else { throw UsageError(description: "--latency-share needs P in 0...1, got \(text)") }
                config.latencyShare = p
            case "--error-rate":
                let text = try value(flag)
                let parts = text.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, let kind = InjectedError(rawValue: String(parts[0])),
                      let p = Double(parts[1]), (0...1).contains(p) else {
                    throw UsageError(description: "--error-rate needs KIND=P with P in 0...1 and KIND one of \(InjectedError.allCases.map(\.rawValue).joined(separator: " ")), got \(text)")
                }
                config.errorRates[kind] = p
            case "--quota-per-minute": config.quotaPerMinute = try integer(flag, min: 1)
            case "--goaway-every": config.goawayEveryRequests = try integer(flag, min: 1)
            case "--record": config.recordCapacity = try integer(flag)
            case "--max-streams": config.maxConcurrentStreams = try integer(flag, min: 1)
            case "--metadata-server": config.metadataServer = true
            default: throw UsageError(description: "unknown option \(flag) (see --help)")
            }
        }
        if (config.tlsCertificateFile == nil) != (config.tlsKeyFile == nil) {
            throw UsageError(description: "--tls-cert and --tls-key go together")
        }
        return .serve(config)
    }

    static func parseLatency(_ text: String) throws(UsageError) -> Latency {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        let numbers = parts.compactMap { Int($0) }.filter { $0 >= 0 }
        guard numbers.count == parts.count else { throw UsageError(description: "--latency needs MS or MIN-MAX, got \(text)") }
        switch numbers.count {
        case 1: return numbers[0] == 0 ? .none : .fixed(.milliseconds(numbers[0]))
        case 2 where numbers[0] <= numbers[1]: return .uniform(min: .milliseconds(numbers[0]), max: .milliseconds(numbers[1]))
        default: throw UsageError(description: "--latency needs MS or MIN-MAX, got \(text)")
        }
    }

    private static func parseMakeServiceAccount(_ arguments: [String]) throws(UsageError) -> EmulatorCommand {
        var project: String?, email: String?, tokenURI: String?, output: String?
        var args = arguments[...]
        while let flag = args.popFirst() {
            guard flag != "--help", flag != "-h" else { return .help }
            guard let v = args.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
            switch flag {
            case "--project": project = v
            case "--email": email = v
            case "--token-uri": tokenURI = v
            case "--out": output = v
            default: throw UsageError(description: "unknown option \(flag) for make-service-account (see --help)")
            }
        }
        guard let project, let tokenURI, let output else {
            throw UsageError(description: "make-service-account needs --project, --token-uri and --out")
        }
        return .makeServiceAccount(project: project, email: email ?? ServiceAccountFactory.defaultClientEmail(projectID: project),
                                   tokenURI: tokenURI, output: output)
    }
}
