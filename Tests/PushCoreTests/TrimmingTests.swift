import PushCore
import Testing

/// `trimmingWhitespace`, which replaced Foundation's `trimmingCharacters(in:)` (pure logic).
@Suite struct TrimmingTests {
    @Test func spacesAndTabsGoFromBothEndsAndLineBreaksOnlyWhenAsked() {
        #expect(" \t a b \t".trimmingWhitespace() == "a b")
        #expect("\n a \n".trimmingWhitespace() == "\n a \n")
        #expect("\r\n a \n\t".trimmingWhitespace(newlines: true) == "a")
        #expect("   ".trimmingWhitespace() == "" && "".trimmingWhitespace() == "")
        #expect("x,  y ".split(separator: ",").map { $0.trimmingWhitespace() } == ["x", "y"])
    }
}
