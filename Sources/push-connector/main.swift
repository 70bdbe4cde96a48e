import Connector
import Foundation

// Thin entry point: all parsing and wiring lives in Connector.PushConnectorTool.
let code = await PushConnectorTool.main(Array(CommandLine.arguments.dropFirst()))
exit(code)
