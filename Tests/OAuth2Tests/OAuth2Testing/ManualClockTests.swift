import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// No test here sleeps for real: a sleeper that is not woken keeps the test
/// waiting until the time limit, and fails it.
@Suite(.timeLimit(.minutes(1))) struct ManualClockTests {
    let clock = ManualClock()

    /// A task asleep on the clock for `duration`, once it is asleep.
    private func sleeper(_ duration: Duration) async throws -> Task<Void, any Error> {
        let asleep = clock.sleeperCount
        let task = Task { [clock] in try await clock.sleep(for: duration) }
        try await clock.waitForSleepers(count: asleep + 1)
        return task
    }

    @Test func sleeperWakesWhenTheClockReachesItsDeadline() async throws {
        let task = try await sleeper(.seconds(5))
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        #expect(clock.sleeperCount == 0)
        try await task.value
    }

    @Test func sleepersWakeInDeadlineOrder() async throws {
        let late = try await sleeper(.seconds(3))
        let early = try await sleeper(.seconds(1))
        let middle = try await sleeper(.seconds(2))
        clock.advance(by: .seconds(1))
        try await early.value
        #expect(clock.sleeperCount == 2)
        clock.advance(by: .seconds(1))
        try await middle.value
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        try await late.value
        #expect(clock.sleeperCount == 0)
    }

    @Test func advancingPastSeveralDeadlinesWakesThemAll() async throws {
        let tasks = [
            try await sleeper(.seconds(1)),
            try await sleeper(.seconds(30)),
            try await sleeper(.milliseconds(1500)),
        ]
        let outlier = try await sleeper(.seconds(31))
        clock.advance(by: .seconds(30))
        for task in tasks {
            try await task.value
        }
        #expect(clock.sleeperCount == 1)
        outlier.cancel()
        await #expect(throws: CancellationError.self) { try await outlier.value }
    }

    @Test func wokenSleeperReadsTheNewTime() async throws {
        let start = clock.now()
        let task = Task { [clock] in
            try await clock.sleep(for: .seconds(10))
            return clock.now()
        }
        try await clock.waitForSleepers()
        clock.advance(by: .seconds(25))
        #expect(try await task.value == start.addingTimeInterval(25))
    }

    @Test func settingTheDateWakesTheSleepersItPasses() async throws {
        let start = clock.now()
        let passed = try await sleeper(.seconds(60))
        let notYet = try await sleeper(.seconds(120))
        clock.set(start.addingTimeInterval(90))
        try await passed.value
        #expect(clock.sleeperCount == 1)
        #expect(clock.now() == start.addingTimeInterval(90))
        clock.advance(by: .seconds(30))
        try await notYet.value
    }

    @Test func movingTheClockBackWakesNoOne() async throws {
        let start = clock.now()
        let task = try await sleeper(.seconds(5))
        clock.advance(by: .seconds(-10))
        clock.set(start.addingTimeInterval(-60))
        #expect(clock.sleeperCount == 1)
        clock.set(start.addingTimeInterval(5))
        try await task.value
    }

    @Test func smallStepsReachADeadlineExactly() async throws {
        let task = try await sleeper(.seconds(1))
        for _ in 0..<9 {
            clock.advance(by: .milliseconds(100))
        }
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(100))
        #expect(clock.sleeperCount == 0)
        try await task.value
    }

    @Test func cancellingASleeperEndsItAtOnceWithCancellationError() async throws {
        let cancelled = try await sleeper(.seconds(5))
        let other = try await sleeper(.seconds(5))
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(5))
        try await other.value
    }

    @Test func aCancelledTaskDoesNotSleep() async throws {
        let task = Task { [clock] in
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(5))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test(arguments: [Duration.zero, .seconds(-1), .nanoseconds(-1)])
    func sleepingForZeroOrLessReturnsAtOnce(duration: Duration) async throws {
        let start = clock.now()
        try await clock.sleep(for: duration)
        #expect(clock.sleeperCount == 0)
        #expect(clock.now() == start)
    }

    @Test func cancellingAfterTheWakeupChangesNothing() async throws {
        let task = try await sleeper(.seconds(1))
        clock.advance(by: .seconds(1))
        task.cancel()
        try await task.value
    }

    @Test func waitForSleepersReturnsAtOnceWhenEnoughAreAsleep() async throws {
        let first = try await sleeper(.seconds(1))
        let second = try await sleeper(.seconds(1))
        try await clock.waitForSleepers(count: 2)
        try await clock.waitForSleepers(count: 0)
        clock.advance(by: .seconds(1))
        try await first.value
        try await second.value
    }

    @Test func waitForSleepersCountsOnlyTheStillAsleep() async throws {
        let woken = try await sleeper(.seconds(1))
        clock.advance(by: .seconds(1))
        try await woken.value
        #expect(clock.sleeperCount == 0)
        let waiter = Task { [clock] in try await clock.waitForSleepers(count: 1) }
        let next = Task { [clock] in try await clock.sleep(for: .seconds(1)) }
        try await waiter.value
        #expect(clock.sleeperCount == 1)
        next.cancel()
        await #expect(throws: CancellationError.self) { try await next.value }
    }

    @Test func waitForSleepersEndsWithCancellationError() async throws {
        let waiter = Task { [clock] in try await clock.waitForSleepers(count: 1) }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellationRacingTheWakeupEndsEachSleeperOnce() async throws {
        let tasks = (0..<200).map { _ in Task { [clock] in try await clock.sleep(for: .seconds(1)) } }
        try await clock.waitForSleepers(count: tasks.count)
        let advancing = Task { [clock] in clock.advance(by: .seconds(1)) }
        for task in tasks {
            task.cancel()
        }
        await advancing.value
        for task in tasks {
            switch await task.result {
            case .success: break
            case .failure(let error): #expect(error is CancellationError)
            }
        }
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellationRacingTheStartOfASleepIsNotLost() async throws {
        let tasks = (0..<200).map { _ in Task { [clock] in try await clock.sleep(for: .seconds(1)) } }
        for task in tasks {
            task.cancel()
        }
        for task in tasks {
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        #expect(clock.sleeperCount == 0)
    }
}
