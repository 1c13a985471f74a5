/// Tells the time. Injected into everything that reads an expiry, so tests
/// can move time without sleeping.
public protocol OAuth2Clock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemClock: OAuth2Clock {
    /// Creates the system clock.
    public init() {}
    public func now() -> Date { Date() }
}
