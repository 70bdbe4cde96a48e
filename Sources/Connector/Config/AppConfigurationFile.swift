import Foundation
import PushCore

/// Reads the App ID configuration file; every problem is reported with the file and field named.
public enum AppConfigurationFile {
    /// The registry in `path`, or a `CommandFailure` naming the file, field and rule of each problem.
    public static func load(_ path: String) throws(CommandFailure) -> AppRegistry {
        let bytes = try readFile(path, what: "App ID configuration")
        do {
            return try AppRegistry.decode(bytes)
        } catch {
            throw CommandFailure(error.issues.map { "\(path): \($0)" }.joined(separator: "\n"), exitCode: 2)
        }
    }

    /// The bytes of a file (or standard input for "-"), or a one-line error naming it.
    public static func readFile(_ path: String, what: String) throws(CommandFailure) -> [UInt8] {
        if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw CommandFailure("\(path): \(what) file \(reason)", exitCode: 2)
        }
        return Array(data)
    }
}
