import Synchronization

extension CurlTransport {
    /// How many threads drive libcurl so far: 1, or 2 once the second engine
    /// has started. For tests.
    package var threadsStarted: Int {
        second.load() == nil ? 1 : 2
    }

    /// Whether the first thread has nothing in flight nor queued: the next
    /// caller may lead. For tests.
    package var firstThreadIsIdle: Bool {
        if case .success(let engine) = engine { return engine.isIdle }
        return false
    }

    /// The first thread's connection limits now: the configuration's, or its
    /// share once a second thread has started. For tests.
    package var firstThreadLimits: (transfersPerHost: Int, connections: Int)? {
        if case .success(let engine) = engine { return engine.limits }
        return nil
    }

    /// How long until callers of the first thread may lead again: a pause
    /// follows a lead that gave way to other requests, or that ran out of
    /// time before its answer came (``Configuration/callerDrivenWait``).
    /// Negative once they may; nil without an engine. For tests.
    package var leadPauseRemaining: Duration? {
        if case .success(let engine) = engine { return engine.leadPauseRemaining }
        return nil
    }

    /// Leads in a row on the first thread whose time ran out before their
    /// answer came; each doubles the pause after it. For tests.
    package var leadsRunOutOfTimeInARow: Int {
        if case .success(let engine) = engine { return engine.leadsRunOutOfTimeInARow }
        return 0
    }

    /// How long nobody leads after `slowLeads` leads in a row ran out of time. For tests.
    package static func leadPause(afterSlowLeads slowLeads: Int) -> Duration {
        .nanoseconds(LeadPolicy.slowAnswersPause(after: slowLeads))
    }

    /// How many requests a caller's lead has started along with its own: with
    /// one CPU, those the other tasks queued while it yielded. For tests.
    package var requestsStartedByOthersLeads: Int {
        if case .success(let engine) = engine { return engine.requestsStartedByOthersLeads }
        return 0
    }
}
