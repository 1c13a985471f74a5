#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CurlTransport {
    /// The settings of a ``CurlTransport``, fixed when it is created.
    ///
    /// A request's own ``HTTPTransportRequest/timeout`` and ``HTTPTransportRequest/maxResponseSize``
    /// take precedence over the defaults here.
    public struct Configuration: Sendable {
        /// The longest a whole exchange may take when the request sets no timeout (30 s).
        ///
        /// It counts from the moment the transport thread takes the request,
        /// so it includes waiting for a free connection.
        public var timeout: Duration
        /// The longest connecting (TCP and TLS handshakes) may take (10 s).
        public var connectTimeout: Duration
        /// The largest response body accepted when the request sets no limit (1 MiB).
        public var maxResponseSize: Int
        /// How many idle connections are kept open for reuse (64).
        ///
        /// Keep it at least as high as the number of concurrent requests the
        /// transport serves, or connections are closed and reopened. Once a
        /// second thread has started (``maxThreads``), each keeps half.
        public var maxConnections: Int
        /// How many requests to one host (its name and port) run at once, and
        /// so how many connections are opened to it at most (64).
        ///
        /// Requests beyond it wait inside the transport, oldest first, until
        /// one to that host ends, instead of opening connections that would be
        /// closed again right after. Their ``timeout`` runs meanwhile: a
        /// request that waits longer fails with ``HTTPTransportError/timeout``
        /// without having been sent. Requests to other hosts do not wait. A
        /// request that follows redirects counts against each hop's host in turn.
        ///
        /// Once a second thread has started (``maxThreads``), each has half of
        /// the limit and its own queue.
        public var maxConnectionsPerHost: Int
        /// A PEM file of certificate authorities to trust instead of the system's, or `nil`.
        ///
        /// TLS verification itself cannot be turned off.
        public var caFile: String?
        /// How long a caller may drive its own request on its own thread, when
        /// nothing else is in flight, before handing it to the transport
        /// thread (1 ms; `.zero` never).
        ///
        /// A request that is answered within this time, such as one to a
        /// server on the same machine or network, then costs no thread
        /// hand-off at all: measured on a loopback server, sequential requests
        /// from the global executor run about twice as fast (BENCHMARKS.md).
        /// The price is that the calling thread, which may be one of Swift's
        /// cooperative threads, blocks in `poll` for up to this long when the
        /// answer takes longer. So that this never holds up other tasks for
        /// long:
        /// - only one caller leads at a time, and it hands over at once when
        ///   another request, a cancellation or ``CurlTransport/shutdown()`` comes;
        /// - after a lead gave way to another request, nobody leads for 10 ms
        ///   (concurrent callers are served best by the transport thread);
        /// - after a lead's time ran out before its answer came, nobody leads
        ///   for 10 ms, twice as long after each further such lead in a row,
        ///   and a second from the eighth on (a host that answers too slowly
        ///   for a lead to help); an answer in time from the same host ends
        ///   the series;
        /// - every 9th request in a row suspends its caller, so a task whose
        ///   requests all complete while it leads still lets others run;
        /// - in a process allowed on one CPU only, whose cooperative pool has
        ///   one thread that a leading caller blocks, the caller first yields
        ///   (`Task.yield()`) while other callers seem to be sending, and
        ///   after eight leads without a yield: the tasks ready to run go
        ///   first, and the requests they send go along with its lead, since
        ///   they could not run before its answer anyway. Tasks that become
        ///   ready while the caller leads wait for its answer, or this long
        ///   at most.
        ///
        /// At most 10 s is used.
        public var callerDrivenWait: Duration
        /// How many threads may drive libcurl (2): 1 or less keeps to one, more than 2 counts as 2.
        ///
        /// The transport starts with one thread. With 2, a second thread,
        /// with a libcurl and connections of its own, starts the first time
        /// the first has 4 requests in flight (8 in a process allowed on one
        /// CPU), and from then on takes a request whenever the first has at
        /// least that many and more than the second. One thread drives
        /// libcurl for every request it serves, the kernel's share of sending
        /// and receiving included: with many concurrent requests to a quick
        /// server it is the limit, and a second one serves about a tenth
        /// more (BENCHMARKS.md, "What was tried").
        ///
        /// The first thread has the whole of ``maxConnections`` and
        /// ``maxConnectionsPerHost`` until the second starts; from then on
        /// each has half, and the requests held back for a host wait their
        /// turn per thread. The second starts only while the first has no
        /// more than its half in flight, so that the halves keep the limits,
        /// and only when both limits are at least 16: with fewer, every
        /// request keeps to one thread and one queue. Tasks on
        /// ``CurlTransport/executor`` keep to the first thread and never start
        /// the second: while only they send, they have the whole limits.
        public var maxThreads: Int
        /// The libcurl version (`CURLVERSION_NUM` form) the transport sets
        /// its options for, instead of the loaded one's: for the tests of an
        /// older libcurl's options on the one this machine has.
        package var assumedLibcurlVersion: UInt32?

        /// Creates a configuration; every parameter has a default.
        public init(
            timeout: Duration = .seconds(30),
            connectTimeout: Duration = .seconds(10),
            maxResponseSize: Int = 1 << 20,
            maxConnections: Int = 64,
            maxConnectionsPerHost: Int = 64,
            caFile: String? = nil,
            callerDrivenWait: Duration = .milliseconds(1),
            maxThreads: Int = 2
        ) {
            self.timeout = timeout
            self.connectTimeout = connectTimeout
            self.maxResponseSize = maxResponseSize
            self.maxConnections = maxConnections
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.caFile = caFile
            self.callerDrivenWait = callerDrivenWait
            self.maxThreads = maxThreads
        }

        /// The smallest ``maxConnections`` and ``maxConnectionsPerHost`` that
        /// a second thread splits.
        static let smallestSplitLimit = 16

        /// When a second thread may start: its settings, with half of the
        /// connection limits, and the first thread's share from then on (the
        /// other half, rounded up); `nil` when the transport keeps to one.
        var secondThread: (configuration: Configuration, firstShare: (transfersPerHost: Int, connections: Int))? {
            guard maxThreads >= 2, maxConnections >= Self.smallestSplitLimit,
                maxConnectionsPerHost >= Self.smallestSplitLimit
            else { return nil }
            var second = self
            second.maxConnections = maxConnections / 2
            second.maxConnectionsPerHost = maxConnectionsPerHost / 2
            return (second, ((maxConnectionsPerHost + 1) / 2, (maxConnections + 1) / 2))
        }
    }
}

extension Duration {
    /// Whole milliseconds, at least 1: libcurl reads a timeout of 0 as "no timeout".
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 1 }
        let (millis, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int(Int32.max) }
        let total = millis + attoseconds / 1_000_000_000_000_000
        return Swift.min(Swift.max(Int(truncatingIfNeeded: total), 1), Int(Int32.max))
    }
}
