import Testing

@testable import OAuth2

/// ``LeadPolicy``: whether a caller may drive libcurl itself, and the pauses
/// after leads that did not pay. Time is nanoseconds passed in: no clock, no
/// socket, no thread.
@Suite struct LeadPolicyTests {
    private static let millisecond: Int64 = 1_000_000
    /// A time well after the policy's start, where no pause is on.
    private static let start: Int64 = 1_000_000_000_000

    @Test func aCallerLeadsWhenNoPauseIsOn() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        #expect(policy.leadRequested(at: Self.start) == .lead)
        #expect(policy.pauseRemaining(at: Self.start) < 0)
    }

    @Test func afterEightLeadsInARowOneRequestLetsTheOtherTasksRun() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        for lead in 0..<LeadPolicy.maxLeadsInARow {
            #expect(policy.leadRequested(at: Self.start) == .lead, "lead \(lead)")
        }
        #expect(policy.leadRequested(at: Self.start) == .letOthersRun)
        #expect(policy.leadRequested(at: Self.start) == .lead, "the count starts again")
    }

    @Test func withOneCPULeadsInARowAreNotCountedForTheCallerYieldsInstead() {
        var policy = LeadPolicy(yieldsBeforeLeading: true)
        for _ in 0..<(3 * LeadPolicy.maxLeadsInARow) {
            #expect(policy.leadRequested(at: Self.start) == .lead)
        }
    }

    @Test func aDeclinedLeadDoesNotCountAsALeadInARow() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        policy.leadEnded(.gaveWay, host: { "a:80" }, othersQueued: true, at: Self.start)
        for _ in 0..<20 {
            #expect(policy.leadRequested(at: Self.start) == .paused)
        }
        for _ in 0..<LeadPolicy.maxLeadsInARow {
            #expect(policy.leadRequested(at: Self.start + 10 * Self.millisecond) == .lead)
        }
    }

    @Test(arguments: [LeadPolicy.End.answered, .cancelled, .gaveWay])
    func requestsQueuedDuringALeadPauseLeadingForTenMilliseconds(end: LeadPolicy.End) {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        policy.leadEnded(end, host: { "a:80" }, othersQueued: true, at: Self.start)
        #expect(policy.pauseRemaining(at: Self.start) == 10 * Self.millisecond)
        #expect(policy.leadRequested(at: Self.start + 10 * Self.millisecond - 1) == .paused)
        #expect(policy.leadRequested(at: Self.start + 10 * Self.millisecond) == .lead)
    }

    @Test(arguments: [LeadPolicy.End.answered, .cancelled, .gaveWay])
    func aLeadAloneSetsNoPause(end: LeadPolicy.End) {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        policy.leadEnded(end, host: { "a:80" }, othersQueued: false, at: Self.start)
        #expect(policy.leadRequested(at: Self.start) == .lead)
        #expect(policy.slowLeadsInARow == 0)
    }

    @Test func eachLeadThatRunsOutOfTimeDoublesThePauseUpToOneSecond() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        var now = Self.start
        let expected: [Int64] = [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]
        for (index, milliseconds) in expected.enumerated() {
            policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: now)
            #expect(policy.slowLeadsInARow == index + 1)
            #expect(policy.pauseRemaining(at: now) == milliseconds * Self.millisecond)
            #expect(LeadPolicy.slowAnswersPause(after: index + 1) == milliseconds * Self.millisecond)
            #expect(policy.leadRequested(at: now + milliseconds * Self.millisecond - 1) == .paused)
            now += milliseconds * Self.millisecond
            #expect(policy.pauseRemaining(at: now) == 0, "callers may lead again")
        }
    }

    @Test func anAnswerInTimeFromTheSlowHostEndsTheSeries() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: Self.start)
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: Self.start)
        policy.leadEnded(.answered, host: { "slow:443" }, othersQueued: false, at: Self.start + Self.millisecond)
        #expect(policy.slowLeadsInARow == 0)
        let later = Self.start + 100 * Self.millisecond
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: later)
        #expect(policy.pauseRemaining(at: later) == 10 * Self.millisecond, "a new series")
    }

    @Test func anAnswerInTimeFromAnotherHostDoesNotEndTheSeries() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: Self.start)
        policy.leadEnded(.answered, host: { "quick:80" }, othersQueued: false, at: Self.start + Self.millisecond)
        #expect(policy.slowLeadsInARow == 1)
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: Self.start + 20 * Self.millisecond)
        #expect(policy.pauseRemaining(at: Self.start + 20 * Self.millisecond) == 20 * Self.millisecond)
    }

    @Test func aCancelledLeadNeitherEndsNorExtendsTheSeries() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: Self.start)
        policy.leadEnded(.cancelled, host: { "slow:443" }, othersQueued: false, at: Self.start + 20 * Self.millisecond)
        #expect(policy.slowLeadsInARow == 1)
        #expect(policy.leadRequested(at: Self.start + 20 * Self.millisecond) == .lead)
    }

    @Test func theHostIsNotMadeForAnAnswerWhenNoSeriesIsOn() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        var asked = 0
        policy.leadEnded(
            .answered,
            host: {
                asked += 1
                return "a:80"
            }, othersQueued: false, at: Self.start)
        #expect(asked == 0)
    }

    /// A lead that runs out of time while another request waits: the
    /// doubled pause of the slow host stays, the 10 ms of concurrent callers
    /// does not replace it.
    @Test func aLeadThatRunsOutOfTimeWhileAnotherRequestWaitsKeepsTheLongerPause() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        var now = Self.start
        for slowLeads in 1...3 {
            policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: now)
            now += LeadPolicy.slowAnswersPause(after: slowLeads)
        }
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: true, at: now)
        #expect(policy.pauseRemaining(at: now) == 80 * Self.millisecond)
        #expect(policy.leadRequested(at: now + 10 * Self.millisecond) == .paused)
    }

    @Test func concurrentCallersNeverShortenAPauseAlreadyOn() {
        var policy = LeadPolicy(yieldsBeforeLeading: false)
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: Self.start)
        policy.leadEnded(.ranOutOfTime, host: { "slow:443" }, othersQueued: false, at: Self.start)
        // 20 ms from `start`; a give-way 1 ms later would pause only until 11 ms.
        policy.leadEnded(.gaveWay, host: { "other:80" }, othersQueued: true, at: Self.start + Self.millisecond)
        #expect(policy.pauseRemaining(at: Self.start) == 20 * Self.millisecond)
    }
}
