@testable import CLIKit
import Testing
@testable import Connector

/// The typed option keys: one list, every key an option some command declares, names as the
/// command line writes them.
@Suite struct OptionKeyTests {
    @Test func everyKeyIsDeclaredByACommandAndEveryDeclarationHasItsKey() {
        let declared = Set(PushConnectorTool.commands.flatMap { $0.type.spec.options.map(\.id) })
        let unused = OptionKey.allCases.filter { !declared.contains($0) }
        #expect(unused.isEmpty, "keys no command declares: \(unused.map(\.rawValue))")
    }

    @Test func aKeyIsTheOptionAsWrittenOnTheCommandLine() {
        for key in OptionKey.allCases {
            #expect(key.rawValue.hasPrefix("--") && key.rawValue.dropFirst(2).allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" },
                    "\(key)")
            #expect("\(key)" == key.rawValue)
        }
        #expect(Set(OptionKey.allCases.map(\.rawValue)).count == OptionKey.allCases.count)
    }
}
