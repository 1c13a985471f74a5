#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

public import OAuth2

/// A clock that moves only when told, so expiry and polling are tested without waiting.
///
/// ``sleep(for:)`` suspends until ``advance(by:)`` or ``set(_:)`` moves the
/// clock to or past the sleeper's deadline. A test starts the code under test
/// in a task, awaits ``waitForSleepers(count:)`` to know it is asleep, then
/// moves the clock:
///
/// ```swift
/// let polling = Task { try await client.authenticate(.deviceCode(authorization)) }
/// try await clock.waitForSleepers()
/// clock.advance(by: authorization.interval)   // the next poll happens
/// ```
///
/// Thread-safe: every method may be called from any task or thread.
public final class ManualClock: OAuth2Clock {
    private let state: LockedValue<ManualClockState>

    /// Creates a clock showing `start` (by default a fixed date, so runs are repeatable).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = LockedValue(ManualClockState(start: start))
    }

    /// The time the clock shows.
    public func now() -> Date {
        state.withLock { $0.now.date }
    }

    /// Moves the clock forward (or back, with a negative duration), waking the
    /// sleepers whose deadline it reaches.
    ///
    /// Sleepers are resumed in deadline order once the clock shows the new
    /// time, so a woken sleeper reads that time. Successive advances add up
    /// exactly: ten 100 ms steps reach a 1 s deadline.
    public func advance(by duration: Duration) {
        state.withLock { $0.advance(by: duration) }.resume()
    }

    /// Sets the time, waking the sleepers whose deadline it reaches.
    ///
    /// Sleepers are resumed in deadline order once the clock shows `date`.
    public func set(_ date: Date) {
        state.withLock { $0.set(date) }.resume()
    }

    /// Suspends until the clock is moved to or past `duration` from now.
    ///
    /// Returns at once for a zero or negative duration. Only ``advance(by:)``
    /// and ``set(_:)`` wake a sleeper; real time does not.
    ///
    /// - Throws: `CancellationError` at once when the task is cancelled, before
    ///   or during the sleep.
    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        guard duration > .zero else { return }
        let (id, wakeups) = state.withLock { $0.startSleeping(for: duration) }
        wakeups.resume()
        try await suspend(id)
    }

    /// The number of tasks asleep on this clock: neither woken nor cancelled.
    public var sleeperCount: Int {
        state.withLock { $0.sleeperCount }
    }

    /// Suspends until at least `count` tasks are asleep on this clock; returns
    /// at once when they already are.
    ///
    /// Lets a test move the clock only once the code under test waits on it,
    /// without sleeping for real. A sleeper woken or cancelled before this is
    /// called is not counted.
    ///
    /// - Throws: `CancellationError` when the task is cancelled. Code that
    ///   never sleeps leaves this waiting: give the test a time limit
    ///   (`.timeLimit`) so it fails rather than hangs.
    public func waitForSleepers(count: Int = 1) async throws {
        try Task.checkCancellation()
        guard let id = state.withLock({ $0.startWaiting(forSleepers: count) }) else { return }
        try await suspend(id)
    }

    /// Waits on a registered suspension. It was registered before the
    /// cancellation handler was installed, so a cancellation at any moment
    /// finds it, and it is resumed exactly once, outside the lock.
    private func suspend(_ id: UInt64) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: ManualClockState.Continuation) in
                state.withLock { $0.attach(continuation, to: id) }.resume()
            }
        } onCancel: {
            state.withLock { $0.cancel(id) }.resume()
        }
    }
}
