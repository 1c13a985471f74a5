import Testing

@testable import OAuth2

/// ``HostAdmission``: the per-host limit of transfers in libcurl, and the
/// requests held back until their host has room or their deadline passes.
/// Time is nanoseconds passed in: no clock, no socket, no thread.
@Suite struct HostAdmissionTests {
    /// A request to a host; counts how often its key is asked for.
    final class Request: HostAdmissionRequest, CustomStringConvertible {
        let name: String
        private let key: String
        private(set) var keyReads = 0
        var hostKey: String {
            keyReads += 1
            return key
        }
        var description: String { name }

        init(_ name: String, host: String = "a:443") {
            self.name = name
            key = host
        }
    }

    private static let millisecond: Int64 = 1_000_000

    /// An admission with `running` in libcurl, as the owner reports them.
    private func admission(running: [Request], limit: Int) -> HostAdmission<Request> {
        var admission = HostAdmission<Request>()
        var inLibcurl: [Request] = []
        for request in running {
            #expect(admission.admit(request, timeoutMilliseconds: 1000, inLibcurl: inLibcurl, limit: limit, now: 0) == .start)
            admission.started(request)
            inLibcurl.append(request)
        }
        return admission
    }

    private func started(_ action: HostAdmission<Request>.Action?) -> (Request, Int)? {
        if case .start(let request, let timeout) = action { return (request, timeout) }
        return nil
    }

    private func timedOut(_ action: HostAdmission<Request>.Action?) -> Request? {
        if case .timeOut(let request) = action { return request }
        return nil
    }

    @Test func belowTheLimitARequestStartsWithoutItsHostBeingLookedUp() {
        let first = Request("first")
        let second = Request("second")
        var admission = admission(running: [first], limit: 2)
        #expect(admission.admit(second, timeoutMilliseconds: 1000, inLibcurl: [first], limit: 2, now: 0) == .start)
        #expect(first.keyReads == 0 && second.keyReads == 0)
        #expect(!admission.needsAttention)
    }

    @Test func atTheLimitARequestToTheSameHostIsHeldAndOneToAnotherStarts() {
        let running = [Request("r1"), Request("r2")]
        var admission = admission(running: running, limit: 2)
        let sameHost = Request("same")
        let otherHost = Request("other", host: "b:443")
        #expect(admission.admit(sameHost, timeoutMilliseconds: 1000, inLibcurl: running, limit: 2, now: 0) == .held)
        #expect(admission.admit(otherHost, timeoutMilliseconds: 1000, inLibcurl: running, limit: 2, now: 0) == .start)
        #expect(admission.heldCount == 1)
        #expect(admission.needsAttention)
    }

    @Test func aHeldRequestStartsWhenOneToItsHostEndsWithWhatIsLeftOfItsTimeout() {
        let running = [Request("r1"), Request("r2")]
        var admission = admission(running: running, limit: 2)
        let held = Request("held")
        #expect(admission.admit(held, timeoutMilliseconds: 1000, inLibcurl: running, limit: 2, now: 0) == .held)
        #expect(admission.nextAction(limit: 2, now: 100 * Self.millisecond) == nil, "its host has no room yet")
        admission.ended(running[0], limit: 2)
        let action = started(admission.nextAction(limit: 2, now: 300 * Self.millisecond))
        #expect(action?.0 === held)
        #expect(action?.1 == 700)
        #expect(admission.heldCount == 0)
        #expect(admission.nextAction(limit: 2, now: 300 * Self.millisecond) == nil)
    }

    @Test func heldRequestsStartOldestFirstAsRoomComes() {
        let running = [Request("r1")]
        var admission = admission(running: running, limit: 1)
        let held = (0..<3).map { Request("held\($0)") }
        for request in held {
            #expect(admission.admit(request, timeoutMilliseconds: 1000, inLibcurl: running, limit: 1, now: 0) == .held)
        }
        var inLibcurl = running
        for request in held {
            admission.ended(inLibcurl.removeFirst(), limit: 1)
            let action = started(admission.nextAction(limit: 1, now: Self.millisecond))
            #expect(action?.0 === request)
            admission.started(request)
            inLibcurl.append(request)
            #expect(admission.nextAction(limit: 1, now: Self.millisecond) == nil, "one at a time: the limit is 1")
        }
    }

    /// A held request is failed at its own deadline even when no transfer to
    /// its host ends meanwhile, and the driver is told how long it may wait.
    @Test func aHeldRequestTimesOutAtItsDeadlineThoughItsHostNeverHasRoom() {
        let running = [Request("r1")]
        var admission = admission(running: running, limit: 1)
        let held = Request("held")
        #expect(admission.admit(held, timeoutMilliseconds: 100, inLibcurl: running, limit: 1, now: 0) == .held)
        #expect(admission.millisecondsToNextDeadline(now: 40 * Self.millisecond, longest: 5000) == 60)
        #expect(admission.nextAction(limit: 1, now: 100 * Self.millisecond - 1) == nil)
        #expect(timedOut(admission.nextAction(limit: 1, now: 100 * Self.millisecond)) === held)
        #expect(admission.heldCount == 0)
        #expect(admission.nextAction(limit: 1, now: 100 * Self.millisecond) == nil)
        #expect(admission.millisecondsToNextDeadline(now: 100 * Self.millisecond, longest: 5000) == 5000)
    }

    @Test func onlyTheRequestsPastTheirDeadlineTimeOut() {
        let running = [Request("r1")]
        var admission = admission(running: running, limit: 1)
        let early = Request("early")
        let late = Request("late", host: "a:443")
        #expect(admission.admit(early, timeoutMilliseconds: 100, inLibcurl: running, limit: 1, now: 0) == .held)
        #expect(admission.admit(late, timeoutMilliseconds: 500, inLibcurl: running, limit: 1, now: 0) == .held)
        #expect(timedOut(admission.nextAction(limit: 1, now: 200 * Self.millisecond)) === early)
        #expect(admission.nextAction(limit: 1, now: 200 * Self.millisecond) == nil)
        #expect(admission.heldCount == 1)
        #expect(admission.millisecondsToNextDeadline(now: 200 * Self.millisecond, longest: 5000) == 300)
    }

    @Test func aHeldRequestWhoseHostHasRoomTooLateTimesOutInsteadOfStarting() {
        let running = [Request("r1")]
        var admission = admission(running: running, limit: 1)
        let held = Request("held")
        #expect(admission.admit(held, timeoutMilliseconds: 100, inLibcurl: running, limit: 1, now: 0) == .held)
        admission.ended(running[0], limit: 1)
        #expect(timedOut(admission.nextAction(limit: 1, now: 100 * Self.millisecond - 1)) === held, "less than 1 ms left")
    }

    @Test func aCancelledHeldRequestLeavesTheQueueAndIsNeverStarted() {
        let running = [Request("r1")]
        var admission = admission(running: running, limit: 1)
        let cancelled = Request("cancelled")
        let next = Request("next")
        #expect(admission.admit(cancelled, timeoutMilliseconds: 1000, inLibcurl: running, limit: 1, now: 0) == .held)
        #expect(admission.admit(next, timeoutMilliseconds: 1000, inLibcurl: running, limit: 1, now: 0) == .held)
        let dropped = admission.cancelled(cancelled)
        let droppedAgain = admission.cancelled(cancelled)
        let droppedRunning = admission.cancelled(running[0])
        #expect(dropped)
        #expect(!droppedAgain, "dropped once")
        #expect(!droppedRunning, "not held: in libcurl")
        #expect(admission.heldCount == 1)
        admission.ended(running[0], limit: 1)
        #expect(started(admission.nextAction(limit: 1, now: 0))?.0 === next)
    }

    @Test func aLimitLoweredBelowWhatRunsIsReachedOneEndingAtATime() {
        let running = [Request("r1"), Request("r2"), Request("r3")]
        var admission = admission(running: running, limit: 3)
        let held = Request("held")
        #expect(admission.admit(held, timeoutMilliseconds: 1000, inLibcurl: running, limit: 2, now: 0) == .held)
        admission.ended(running[0], limit: 2)
        #expect(admission.nextAction(limit: 2, now: 0) == nil, "2 still run: the lowered limit")
        admission.ended(running[1], limit: 2)
        #expect(started(admission.nextAction(limit: 2, now: 0))?.0 === held)
    }

    @Test func countingStopsOnceEveryCountedTransferHasEnded() {
        let running = [Request("r1")]
        var admission = admission(running: running, limit: 1)
        let second = Request("second", host: "b:443")
        #expect(admission.admit(second, timeoutMilliseconds: 1000, inLibcurl: running, limit: 1, now: 0) == .start)
        admission.started(second)
        admission.ended(running[0], limit: 1)
        admission.ended(second, limit: 1)
        let later = Request("later")
        #expect(admission.admit(later, timeoutMilliseconds: 1000, inLibcurl: [], limit: 1, now: 0) == .start)
        #expect(later.keyReads == 0, "not counted: nothing is in libcurl")
    }

    @Test func removingAllHandsBackEveryHeldRequestAndForgetsTheCounts() {
        let running = [Request("r1")]
        var admission = admission(running: running, limit: 1)
        let held = [Request("h1"), Request("h2")]
        for request in held {
            #expect(admission.admit(request, timeoutMilliseconds: 1000, inLibcurl: running, limit: 1, now: 0) == .held)
        }
        let removed = admission.removeAll()
        #expect(removed.count == 2 && removed.contains { $0 === held[0] } && removed.contains { $0 === held[1] })
        #expect(admission.heldCount == 0)
        #expect(!admission.needsAttention)
        #expect(admission.admit(Request("new"), timeoutMilliseconds: 1000, inLibcurl: [], limit: 1, now: 0) == .start)
    }
}
