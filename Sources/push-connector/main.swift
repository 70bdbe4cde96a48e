import CLIKit
import Connector
import Glibc
import ServiceRuntime

// Thin entry point: all parsing and wiring lives in Connector.PushConnectorTool.
// A closed pipe (`dlq list | head`) must end a command cleanly, not kill it mid-pass.
signal(SIGPIPE, SIG_IGN)
// The process holds private keys and access tokens: no core files, no ptrace by other users.
if let problem = ProcessHardening.disableCoreDumps() {
    Console.standard.err("push-connector: warning: core dumps could not be disabled: \(problem)")
}
// Every command starts with the soft nofile limit raised to the hard one (see FileDescriptorLimit).
FileDescriptorLimit.raiseSoftToHard()
let code = await PushConnectorTool.main(Array(ProcessArguments.all.dropFirst()))
exit(code)
