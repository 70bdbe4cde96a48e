import CProcessArguments

/// The process's command-line arguments, the program's name first, as the C runtime gave them
/// before `main` (CProcessArguments). Swift's `CommandLine.arguments` comes back empty when a
/// preloaded library moved the environment first (libfaketime does): the executables read these.
public enum ProcessArguments {
    public static var all: [String] {
        let count = Int(process_arguments_count())
        guard count > 0 else { return CommandLine.arguments }
        return (0..<count).map { process_argument(Int32($0)).map { String(cString: $0) } ?? "" }
    }
}
