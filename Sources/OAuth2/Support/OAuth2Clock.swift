#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Tells the time and waits on it. Injected into everything that reads an
/// expiry or waits between attempts, so tests can move time without sleeping.
public protocol OAuth2Clock: Sendable {
    /// The current time.
    func now() -> Date

    /// Suspends the task for `duration` of this clock's time.
    ///
    /// Returns at once for a zero or negative duration.
    ///
    /// - Throws: `CancellationError` when the task is cancelled, before or
    ///   during the sleep; nothing else.
    func sleep(for duration: Duration) async throws
}

extension OAuth2Clock {
    /// Sleeps for real (`Task.sleep`), whatever time the clock tells.
    ///
    /// Right for a clock that only tells time (the system clock, or the system
    /// clock plus an offset). A clock whose time is moved by hand, as in tests,
    /// must implement ``OAuth2Clock/sleep(for:)`` itself so that sleepers wake
    /// when its time passes their deadline.
    ///
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await realSleep(for: duration)
    }
}

/// The system's wall clock.
public struct SystemClock: OAuth2Clock {
    /// Creates the system clock.
    public init() {}

    /// The current time, `Date()`.
    public func now() -> Date { Date() }

    /// Sleeps for real (`Task.sleep`).
    ///
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await realSleep(for: duration)
    }
}

/// `Task.sleep`, which also throws for a task already cancelled when the
/// duration is zero or negative, as ``OAuth2Clock/sleep(for:)`` promises.
private func realSleep(for duration: Duration) async throws {
    try Task.checkCancellation()
    guard duration > .zero else { return }
    try await Task.sleep(for: duration)
}
