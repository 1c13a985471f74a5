import Foundation
import OAuth2
import Testing

@Suite(.timeLimit(.minutes(1))) struct OAuth2ClockTests {
    /// A third-party clock that only tells time: it gets the default sleep.
    struct OffsetClock: OAuth2Clock {
        var offset: TimeInterval
        func now() -> Date { Date().addingTimeInterval(offset) }
    }

    @Test func systemClockSleepsForReal() async throws {
        let start = ContinuousClock.now
        try await SystemClock().sleep(for: .milliseconds(20))
        #expect(ContinuousClock.now - start >= .milliseconds(20))
    }

    @Test func aClockThatOnlyTellsTimeSleepsForReal() async throws {
        let start = ContinuousClock.now
        try await OffsetClock(offset: 3600).sleep(for: .milliseconds(20))
        #expect(ContinuousClock.now - start >= .milliseconds(20))
    }

    @Test(arguments: [SystemClock() as any OAuth2Clock, OffsetClock(offset: 0)])
    func sleepEndsWithCancellationErrorWhenCancelled(clock: any OAuth2Clock) async throws {
        let sleeper = Task { try await clock.sleep(for: .seconds(600)) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }

    @Test(arguments: [SystemClock() as any OAuth2Clock, OffsetClock(offset: 0)])
    func aCancelledTaskDoesNotSleepEvenForZero(clock: any OAuth2Clock) async throws {
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .zero)
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
