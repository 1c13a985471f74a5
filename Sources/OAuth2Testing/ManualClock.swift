import OAuth2

/// A clock that moves only when told, so expiry logic is tested without sleeping.
///
/// Thread-safe.
public final class ManualClock: OAuth2Clock {
    private let current: LockedValue<Date>

    /// Creates a clock showing `start` (by default a fixed date, so runs are repeatable).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = LockedValue(start)
    }

    public func now() -> Date {
        current.withLock { $0 }
    }

    /// Moves the clock forward (or back, with a negative duration).
    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let interval = Double(seconds) + Double(attoseconds) / 1e18
        current.withLock { $0 = $0.addingTimeInterval(interval) }
    }

    /// Sets the time.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
