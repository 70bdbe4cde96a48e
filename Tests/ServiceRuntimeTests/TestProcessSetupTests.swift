import Glibc
import TestProcessSetup
import Testing

/// The test binary ignores SIGPIPE, as the shipped binaries do: a test's write to a pipe or socket
/// whose reader is gone fails with EPIPE, and that test fails, named; the run goes on. (With the
/// default disposition the write would kill the whole run, every later test unrun.)
@Suite struct TestProcessSetupTests {
    @Test func aWriteToAPipeWhoseReaderIsGoneFailsWithEPIPEInsteadOfKillingTheRun() {
        #expect(test_process_ignores_sigpipe() == 1)
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        let written = write(ends[1], "x", 1)
        let error = errno
        close(ends[1])
        #expect(written == -1 && error == EPIPE, "wrote \(written), errno \(error)")
    }
}
