import Synchronization

/// What the transport's tests read of an engine: nothing here is on the
/// path of a request, and each read takes the lock.
extension CurlEngine {
    /// How many requests a leading caller has started along with its own
    /// (queued while it yielded, with one CPU).
    var requestsStartedByOthersLeads: Int {
        lock.withLock { requestsLedAlong }
    }

    /// How long until callers may lead again (a pause after concurrent
    /// callers or a slow answer); negative once they may, and far below zero
    /// when no pause was ever set. Tests time the pause without racing its end.
    var leadPauseRemaining: Duration {
        lock.withLock { .nanoseconds(leadPolicy.pauseRemaining(at: Self.monotonicNanoseconds())) }
    }

    /// Leads in a row that ran out of time before their answer came.
    var leadsRunOutOfTimeInARow: Int {
        lock.withLock { leadPolicy.slowLeadsInARow }
    }

    /// Whether nothing is in flight nor queued, and so the next caller may
    /// lead (unless a pause is on).
    var isIdle: Bool {
        lock.withLock { isIdleLocked }
    }

    /// The connection limits now.
    var limits: (transfersPerHost: Int, connections: Int) {
        (maxTransfersPerHost.load(ordering: .relaxed), connectionCacheSize.load(ordering: .relaxed))
    }
}

#if DEBUG
/// Points where the transport's tests stop an engine, to reach a race
/// window on purpose. Debug builds only: a release build has no probe on
/// the path of a request.
package enum CurlEngineProbes {
    /// Called on the driver's thread just before it puts a transfer into
    /// libcurl, with the transfer's URL; `nil`: no probe.
    package static let beforeStartProbe = LockedValue<(@Sendable (String) -> Void)?>(nil)

    static func beforeStart(_ url: String) {
        beforeStartProbe.withLock { $0 }?(url)
    }

    /// Called on the starting thread once an engine has started its thread,
    /// with its configuration and a function that says whether it has
    /// stopped; `nil`: no probe.
    package static let engineStartedProbe =
        LockedValue<(@Sendable (CurlTransport.Configuration, @escaping @Sendable () -> Bool) -> Void)?>(nil)

    static func engineStarted(_ configuration: CurlTransport.Configuration, hasStopped: @escaping @Sendable () -> Bool) {
        engineStartedProbe.withLock { $0 }?(configuration, hasStopped)
    }
}
#endif
