import Connector
import Foundation

// Thin entry point: all parsing and wiring lives in Connector.PushConnectorTool.
// A closed pipe (`dlq list | head`) must end a command cleanly, not kill it mid-pass.
signal(SIGPIPE, SIG_IGN)
// Every command starts with the soft nofile limit raised to the hard one (see FileDescriptorLimit).
FileDescriptorLimit.raiseSoftToHard()
let code = await PushConnectorTool.main(Array(CommandLine.arguments.dropFirst()))
exit(code)
