import Testing
@testable import AMQP

/// The consumer's subscription without a broker: which cancel-ok ends the deliveries, what an
/// owner's cancel does in each phase, and how a prefetch resize goes through a wait for room.
@Suite struct ConsumerSubscriptionTests {
    private func resizing(to target: UInt16) -> ConsumerSubscription {
        var s = ConsumerSubscription()
        let step = s.size(resize: { target }, mayConsume: { _ in false })
        #expect(step == .sendCancel)
        return s
    }

    @Test func anOwnersCancelIsSentOnceAndItsCancelOkEndsTheDeliveries() {
        var s = ConsumerSubscription()
        #expect(s.cancel() == .sendCancel)
        #expect(s.cancel() == .nothing, "a second cancel sends nothing")
        #expect(s.handsOutDeliveries, "deliveries sent before the cancel-ok still reach the owner")
        #expect(s.cancelConfirmed() == .finishStream)
        #expect(!s.handsOutDeliveries)
        #expect(s.cancelConfirmed() == .nothing)
        #expect(s.cancel() == .nothing)
    }

    @Test func aResizesCancelOkHoldsTheSubscriptionUntilThereIsRoomThenConsumesAgain() {
        var s = resizing(to: 40)
        #expect(s.phase == .resizing(to: 40))
        #expect(s.size(resize: { 10 }, mayConsume: { _ in true }) == .nothing, "one resize at a time")
        #expect(s.cancelConfirmed() == .hold)
        #expect(s.handsOutDeliveries, "a resize does not end the deliveries")
        #expect(s.size(resize: { 10 }, mayConsume: { _ in false }) == .nothing, "no room yet")
        var asked: UInt16 = 0
        let step = s.size(resize: { 10 }, mayConsume: { asked = $0; return true })
        #expect(step == .consume(40) && asked == 40)
        #expect(s.phase == .consuming)
    }

    @Test func anOwnersCancelDuringAResizeEndsTheDeliveriesAtTheResizesCancelOk() {
        var s = resizing(to: 40)
        #expect(s.cancel() == .nothing, "the resize's cancel is already on its way")
        #expect(s.cancelConfirmed() == .finishStream, "not a hold: the owner cancelled")
        #expect(s.size(resize: { 10 }, mayConsume: { _ in true }) == .nothing)
    }

    @Test func anOwnersCancelWhileWaitingForRoomEndsAtOnceWithNothingSent() {
        var s = resizing(to: 40)
        #expect(s.cancelConfirmed() == .hold)
        #expect(s.cancel() == .finishStream)
        #expect(!s.handsOutDeliveries)
        #expect(s.size(resize: { 10 }, mayConsume: { _ in true }) == .nothing, "never consumes again")
    }

    @Test func aCancelByTheServerEndsEveryPhaseAndNothingFollows() {
        var consuming = ConsumerSubscription()
        consuming.cancelledByServer()
        var waiting = resizing(to: 5)
        _ = waiting.cancelConfirmed()
        waiting.cancelledByServer()
        for var s in [consuming, waiting] {
            #expect(!s.handsOutDeliveries)
            #expect(s.cancel() == .nothing)
            #expect(s.cancelConfirmed() == .nothing)
            #expect(s.size(resize: { 10 }, mayConsume: { _ in true }) == .nothing)
        }
    }

    @Test func anUnaskedCancelOkEndsTheDeliveries() {
        var s = ConsumerSubscription()
        #expect(s.cancelConfirmed() == .finishStream)
        #expect(!s.handsOutDeliveries)
    }
}
