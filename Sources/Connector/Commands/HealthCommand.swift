import CLIKit
import HTTPServer
/// `push-connector health URL`: for container health checks (the image has no curl). GETs the
/// URL and exits 0 on a 2xx answer, 1 on any other answer or none, with one line saying which.
public struct HealthCommand: Command {
    public static let spec = CommandSpec(
        name: "health", synopsis: "URL [--timeout S]",
        about: """
        GETs URL (http:// or https://, e.g. http://127.0.0.1:9090/readyz) and exits 0 when the answer
        is 2xx, 1 for any other status, a refused connection or a timeout; prints one line either way.
        Meant for a Dockerfile HEALTHCHECK or an exec probe: the image has no curl.
        """,
        options: [
            .value(.timeout, "DURATION", "give up after this long", default: "5s", .seconds(1...300), setting: false),
            .value(.caFile, "FILE", "CA bundle to verify an https:// URL with (default: the system's)", .readableFile,
                   setting: false),
        ],
        positionals: 1...1)

    let url: String
    let timeout: Int
    let caFile: String?

    public init(_ arguments: ParsedArguments) throws(UsageError) {
        url = arguments.positionals[0]
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw UsageError("health: URL must start with http:// or https://, got \"\(url)\"")
        }
        timeout = arguments.requiredSeconds(.timeout)
        caFile = arguments[.caFile]
    }

    public func run(_ context: CommandContext) async throws -> Int32 {
        switch HealthProbe.get(url, timeoutMilliseconds: timeout * 1000, caFile: caFile) {
        case .success(let status) where (200...299).contains(status):
            context.console.out("healthy: \(url) answered \(status)")
            return 0
        case .success(let status):
            context.console.err("unhealthy: \(url) answered \(status)")
            return 1
        case .failure(let error):
            context.console.err("unhealthy: \(url): \(error.message)")
            return 1
        }
    }
}
