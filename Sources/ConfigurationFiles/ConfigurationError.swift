/// A configuration refused where it is read (the App ID file, a credentials file, the event keys):
/// one line per problem, each naming the file and the field, never a secret. The pipeline throws
/// it; the command line reports it and exits 2, a reload logs it and keeps the previous one.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
