import Glibc
import OSThread
import Testing

/// The one inbox and wake-up every loop thread uses (issue 30): a burst of submits costs one
/// wake-up, a pass takes everything in order, a closed inbox refuses, and the eventfd is
/// readable exactly while a wake-up is pending.
@Suite struct LoopPrimitiveTests {
    @Test func aBurstOfSubmitsWakesTheLoopOnceAndAPassTakesThemInOrder() {
        let inbox = LoopInbox<Int>()
        var wakes = 0
        for i in 0..<5 { #expect(inbox.submit(i, wake: { wakes += 1 })) }
        #expect(wakes == 1, "only the submit that made the inbox non-empty wakes")
        var batch: [Int] = [99]
        #expect(inbox.take(into: &batch) == false)
        #expect(batch == [0, 1, 2, 3, 4])
        #expect(inbox.submit(5, wake: { wakes += 1 }) && wakes == 2, "empty again: the next submit wakes")
        #expect(inbox.close() && !inbox.close(), "close is true the first time only")
        #expect(!inbox.submit(6, wake: { wakes += 1 }) && wakes == 2, "a closed inbox refuses without waking")
        #expect(inbox.take(into: &batch) == true && batch == [5], "what was queued before the close is still taken")
    }

    @Test func theWakeupIsReadableWhileASignalIsPendingAndNotAfterItIsConsumed() throws {
        let wakeup = try LoopWakeup()
        #expect(!readable(wakeup.fd))
        wakeup.signal()
        wakeup.signal()
        #expect(readable(wakeup.fd))
        wakeup.consume()
        #expect(!readable(wakeup.fd), "two signals, one consume: one wake-up")
        let inbox = LoopInbox<String>()
        #expect(inbox.submit("a", wakeup: wakeup) && readable(wakeup.fd))
        wakeup.close()
        wakeup.close()
        #expect(wakeup.fd == -1, "closed once, idempotent")
        wakeup.signal()
        wakeup.consume()
    }

    private func readable(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLIN) != 0
    }
}
