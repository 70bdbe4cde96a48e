import FoundationEssentials

/// Builds `AMQPSettings` from a URL plus the environment, so that the password need not be on a
/// command line (visible in `ps`). Pure: the environment and the file reader are injected.
///
/// Precedence: a password inside the URL wins; otherwise `PUSH_CONNECTOR_AMQP_PASSWORD`;
/// otherwise the content of the file named by `PUSH_CONNECTOR_AMQP_PASSWORD_FILE` (one trailing
/// newline stripped, as written by `echo` or Kubernetes secrets); otherwise the URL's (empty)
/// password. A URL with a user and no password (`amqp://app@host/`) is the usual form.
public struct AMQPCredentialResolver: Sendable {
    public static let passwordVariable = "PUSH_CONNECTOR_AMQP_PASSWORD"
    public static let passwordFileVariable = "PUSH_CONNECTOR_AMQP_PASSWORD_FILE"

    private let environment: [String: String]
    private let readFile: @Sendable (String) throws -> String

    /// - Parameters:
    ///   - environment: usually `ProcessInfo.processInfo.environment`.
    ///   - readFile: reads a whole file as UTF-8 (tests pass a dictionary lookup).
    public init(environment: [String: String],
                readFile: @escaping @Sendable (String) throws -> String = { path in
                    try String(contentsOfFile: path, encoding: .utf8)
                }) {
        self.environment = environment
        self.readFile = readFile
    }

    /// Parses `url` and fills the password from the environment when the URL has none.
    public func settings(url: String) throws(AMQPError) -> AMQPSettings {
        var settings = try AMQPSettings(url: url)
        if settings.password.isEmpty, let password = try password() {
            settings.password = password
        }
        return settings
    }

    /// The password from the environment, or nil when neither variable is set.
    public func password() throws(AMQPError) -> String? {
        if let value = environment[Self.passwordVariable], !value.isEmpty { return value }
        guard let path = environment[Self.passwordFileVariable], !path.isEmpty else { return nil }
        let content: String
        do { content = try readFile(path) } catch {
            throw .invalidSettings("cannot read \(Self.passwordFileVariable) (\(path))")
        }
        var password = Substring(content)
        if password.hasSuffix("\r\n") { password = password.dropLast(2) }
        else if password.hasSuffix("\n") { password = password.dropLast() }
        return String(password)
    }
}
