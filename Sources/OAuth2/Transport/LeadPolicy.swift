/// Whether a caller that finds the transport idle may drive libcurl itself
/// (*lead*, ``CurlEngine/lead(_:afterYield:)``), and the pauses after leads
/// that did not pay.
///
/// A lead saves the two thread hand-offs of a request, but only while the
/// caller is alone and its answer comes quickly. Two signs say it is not:
///
/// - another request was queued while a caller led: there are concurrent
///   callers, whom the engine thread serves better alone for a while
///   (``concurrentCallersPause``);
/// - a lead's time ran out before its answer came: a slow host, for which a
///   lead only blocks its caller's thread. The pause doubles with each such
///   lead in a row (``slowAnswersPause(after:)``); an answer in time from the
///   same host ends the series.
///
/// A pure value: time comes in as CLOCK_MONOTONIC nanoseconds, and the
/// engine keeps it under its lock. The engine also decides the things that
/// are not policy (whether libcurl is free, whether the engine is running).
struct LeadPolicy {
    /// What a caller that asks to lead is told (``leadRequested(at:)``).
    enum Decision: Equatable {
        /// Drive the transfer now.
        case lead
        /// A pause is on: hand the request to the engine thread.
        case paused
        /// The caller led ``maxLeadsInARow`` times without suspending: this
        /// request goes through the engine thread, so that the other tasks
        /// waiting for the caller's thread run.
        case letOthersRun
    }

    /// How a lead ended (``leadEnded(_:host:othersQueued:at:)``).
    enum End: Equatable {
        /// The answer came within the lead.
        case answered
        /// The Task was cancelled.
        case cancelled
        /// Another request or a cancellation was queued, or the engine is
        /// stopping: the engine thread takes the transfer over.
        case gaveWay
        /// The lead's time ran out before the answer came; the engine thread
        /// takes the transfer over.
        case ranOutOfTime
    }

    /// Whether the policy counts leads in a row (``maxLeadsInARow``): not
    /// with one CPU, where a caller yields before it leads instead.
    private let countsLeadsInARow: Bool
    /// No caller leads before this time (CLOCK_MONOTONIC ns).
    private var noLeadUntil: Int64 = 0
    /// Leads in a row whose time ran out before their answer came; each
    /// doubles the pause after it.
    private(set) var slowLeadsInARow = 0
    /// The host (``CurlTransfer/hostKey``) of the last lead that ran out of
    /// time. A quick answer from another host does not end the series: a
    /// slow host's leads would otherwise pause only 10 ms after each quick
    /// answer from another, and block their callers' threads every time.
    private var slowLeadsHost: String?
    /// Leads since a caller last suspended for its response.
    private var leadsInARow = 0

    /// A policy with no pause on. `yieldsBeforeLeading`: callers yield
    /// before they lead (one CPU), so leads in a row are not counted.
    init(yieldsBeforeLeading: Bool) {
        countsLeadsInARow = !yieldsBeforeLeading
    }

    /// A caller found libcurl free at `now` and asks to lead.
    mutating func leadRequested(at now: Int64) -> Decision {
        guard now >= noLeadUntil else { return .paused }
        if countsLeadsInARow {
            guard leadsInARow < Self.maxLeadsInARow else {
                leadsInARow = 0
                return .letOthersRun
            }
            leadsInARow += 1
        }
        return .lead
    }

    /// A lead ended at `now`. `host`: the lead's host key, asked for only
    /// when a series of slow answers is on (making it costs a string).
    /// `othersQueued`: other callers' requests were queued meanwhile.
    ///
    /// A pause already on is never shortened: of two reasons to pause, the
    /// longer wins (a lead that ran out of time while another request
    /// waited keeps its doubled pause, not the 10 ms of concurrent callers).
    mutating func leadEnded(_ end: End, host: () -> String, othersQueued: Bool, at now: Int64) {
        switch end {
        case .answered:
            if slowLeadsInARow > 0 && host() == slowLeadsHost {
                slowLeadsInARow = 0
                slowLeadsHost = nil
            }
        case .ranOutOfTime:
            // A remote host, for which leading would only block callers'
            // threads, or a quick one that stalled once (its next answer in
            // time ends the series).
            slowLeadsInARow += 1
            slowLeadsHost = host()
            pause(until: now + Self.slowAnswersPause(after: slowLeadsInARow))
        case .cancelled, .gaveWay:
            break
        }
        if othersQueued {
            pause(until: now + Self.concurrentCallersPause)
        }
    }

    /// Nanoseconds until callers may lead again; zero or negative once they
    /// may, far below zero when no pause was ever on.
    func pauseRemaining(at now: Int64) -> Int64 {
        noLeadUntil - now
    }

    private mutating func pause(until end: Int64) {
        noLeadUntil = Swift.max(noLeadUntil, end)
    }

    /// A task whose requests all complete while it leads never suspends, and
    /// would keep its thread from every other task on it (a custom executor's
    /// one thread): after this many leads in a row, one request goes through
    /// the engine thread and its caller suspends; with one CPU, the caller
    /// yields before the next lead instead.
    static let maxLeadsInARow = 8

    /// How long no caller leads after a lead gave way to another request (10 ms).
    static let concurrentCallersPause: Int64 = 10_000_000

    /// How long no caller leads after the `slowLeads`-th lead in a row whose
    /// time ran out before its answer came: 10 ms after the first, doubling
    /// with each, 1 s from the eighth on.
    ///
    /// Answers that slow, again and again, come from a host a lead cannot
    /// help with, and each lead would block its caller's thread for the
    /// whole wait, with one CPU the only thread of Swift's pool: the pause
    /// grows until that costs a lead's wait a second. One stall of a quick
    /// host (the machine busy for a millisecond) costs only 10 ms of requests
    /// through the engine thread: a fixed second of them made a whole
    /// sequential benchmark run up to half again slower.
    static func slowAnswersPause(after slowLeads: Int) -> Int64 {
        let doublings = Swift.min(Swift.max(slowLeads, 1) - 1, 7)
        return Swift.min(firstSlowAnswersPause << doublings, longestSlowAnswersPause)
    }

    /// The pause after one lead ran out of time (10 ms).
    private static let firstSlowAnswersPause: Int64 = 10_000_000
    /// The longest pause after leads that ran out of time (1 s).
    private static let longestSlowAnswersPause: Int64 = 1_000_000_000
}
