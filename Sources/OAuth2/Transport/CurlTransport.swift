#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Synchronization

/// The default ``HTTPTransport``: libcurl, driven by one thread, and by a
/// second one when many requests are in flight at once.
///
/// Create one transport and share it: every client, every account and every
/// task can send through it at once. Connections are kept alive and reused
/// (HTTP/1.1 keep-alive, HTTP/2 when an `https` server offers it).
///
/// - A request goes to a dedicated thread that drives libcurl; the caller's
///   task waits without blocking a thread. With many requests in flight, a
///   second thread with a libcurl of its own takes part of them
///   (``Configuration/maxThreads``). When nothing else is in flight, the
///   caller first drives its request itself for a moment
///   (``Configuration/callerDrivenWait``): a quick answer then costs no thread
///   hand-off. Tasks may also run on the transport's thread (``executor``),
///   which saves the two hand-offs of every other request.
/// - Only absolute `http` and `https` URLs are sent, TLS certificates are
///   always verified, redirects are followed only when the request asks
///   (``RedirectPolicy/follow``: at most 10, never from `https` to `http`,
///   the request's header fields and body only to its own origin, as
///   ``SigningTransport`` follows them; a refused redirect throws
///   ``HTTPTransportError/unsupportedURL``), and
///   the response body is bounded (``HTTPTransportRequest/maxResponseSize``, else
///   ``Configuration/maxResponseSize``; response headers are bounded to 256 KiB).
/// - Cancelling the sending Task abandons the request at once: `send` throws
///   `CancellationError` (not ``HTTPTransportError/cancelled``) and the
///   transfer is removed from libcurl.
/// - The request is sent as built: libcurl's own `Accept`, `Expect` and form
///   `Content-Type` headers are suppressed; `Content-Length` comes from the
///   body (a caller's `Content-Length` field is ignored).
/// - libcurl's usual proxy environment variables (`https_proxy`, `no_proxy`, …)
///   apply, except to loopback hosts, which are always reached directly.
///
/// Call ``shutdown()`` when done. A transport released without it stops its
/// threads in the background: nothing can be in flight then, since every
/// `send` keeps the transport alive until it returns.
public final class CurlTransport: HTTPTransport, Sendable {
    /// The settings this transport was created with.
    public let configuration: Configuration
    /// `configuration.timeout` in milliseconds, for requests without a
    /// timeout of their own: converted once, not per request (a `Duration`'s
    /// components divide a 128-bit count, 190 instructions).
    private let defaultTimeoutMilliseconds: Int
    /// The first engine: every request goes to it unless it is busy and a second may help.
    private let engine: Result<CurlEngine, HTTPTransportError>
    /// The second engine, started the first time the first one is busy
    /// (``secondThreadThreshold``); never when ``secondThread`` is `nil`.
    private let second = AtomicLazyReference<CurlEngine>()
    /// The second engine's settings (half of the connection limits) and the
    /// first engine's share once the second has started (the other half; it
    /// has the whole limits until then), or `nil` when this transport keeps
    /// to one thread (``Configuration/maxThreads``).
    private let secondThread: (configuration: Configuration, firstShare: (transfersPerHost: Int, connections: Int))?
    /// Requests in ``send(_:)`` on the first and on the second engine.
    private let firstLoad = Atomic<Int>(0)
    private let secondLoad = Atomic<Int>(0)
    /// A request goes to the second engine when the first has at least this
    /// many in flight, and more than the second: 4, or 8 with one CPU, where
    /// 8 callers run best led on the one thread (BENCHMARKS.md, issue 15,
    /// twelfth pass).
    private let secondThreadThreshold: Int
    /// The second engine could not start: one thread it is.
    private let secondFailed = Atomic<Bool>(false)
    /// ``shutdown()`` has begun: a second engine started now stops at once.
    private let isShutDown = Atomic<Bool>(false)
    /// How many CPUs the engines behave as having (`nil`: as the process may use).
    private let allowedCPUs: Int?

    /// Creates a transport and starts its (first) thread; the first transport of the
    /// process opens libcurl (`libcurl.so.4`), which is not linked.
    ///
    /// Should libcurl or the thread fail to start (out of memory, libcurl
    /// missing or broken), every `send` throws ``HTTPTransportError/other(_:)``
    /// saying why.
    public convenience init(configuration: Configuration = Configuration()) {
        self.init(configuration: configuration, allowedCPUs: nil)
    }

    /// A transport that behaves as in a process allowed on `allowedCPUs`
    /// CPUs, whatever this one may use (`nil`: as it may): with 1, callers
    /// yield before they lead (``Configuration/callerDrivenWait``). For tests.
    package init(configuration: Configuration, allowedCPUs: Int?) {
        self.configuration = configuration
        self.allowedCPUs = allowedCPUs
        defaultTimeoutMilliseconds = configuration.timeout.curlMilliseconds
        secondThread = configuration.secondThread
        // The whole limits until a second engine starts: tasks on its
        // executor, which never start one, keep them (BENCHMARKS.md, issue
        // 15, thirteenth pass).
        let engine = Self.startEngine(configuration, allowedCPUs: allowedCPUs)
        self.engine = engine
        // The first engine found out how many CPUs the process may use.
        let oneCPU = if case .success(let started) = engine { started.yieldsBeforeLeading } else { false }
        secondThreadThreshold = oneCPU ? 8 : 4
    }

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
        .nanoseconds(CurlEngine.slowAnswersPause(after: slowLeads))
    }

    /// How many requests a caller's lead has started along with its own: with
    /// one CPU, those the other tasks queued while it yielded. For tests.
    package var requestsStartedByOthersLeads: Int {
        if case .success(let engine) = engine { return engine.requestsStartedByOthersLeads }
        return 0
    }

    private static func startEngine(_ configuration: Configuration, allowedCPUs: Int?) -> Result<CurlEngine, HTTPTransportError> {
        do {
            return .success(try CurlEngine(configuration: configuration, allowedCPUs: allowedCPUs))
        } catch {
            return .failure(error)
        }
    }

    deinit {
        if case .success(let engine) = engine {
            engine.stop()
        }
        second.load()?.stop()
    }

    /// An executor that runs tasks on the transport's own thread, or `nil`
    /// when the transport failed to start.
    ///
    /// By default a request costs two thread hand-offs besides the network: the
    /// caller's task hands it to the transport thread, and the transport thread
    /// resumes the task on Swift's global executor. A task that prefers this
    /// executor (`withTaskExecutorPreference(transport.executor) { ... }` or
    /// `Task(executorPreference: transport.executor) { ... }`) runs on the
    /// transport thread instead: it hands its request to libcurl and gets its
    /// response without waking another thread. Measured on a loopback server,
    /// a loop of sequential requests this way takes about a fifth less time
    /// (BENCHMARKS.md).
    ///
    /// Use it for a task that sends requests one after another and does
    /// little else, such as a command-line tool's or a worker's request loop.
    /// Everything such a task and its child tasks do runs on this one thread,
    /// between libcurl's turns: blocking there, or heavy work such as decoding
    /// a large body, stalls every request of the transport meanwhile, and many
    /// concurrent callers are faster on the global executor, which has every
    /// core. Their requests stay on this thread, never on a second one
    /// (``Configuration/maxThreads``), and never start one: while only such
    /// tasks send, they have the whole connection limits; once other tasks'
    /// requests have started a second thread, this one has half of them.
    /// After ``shutdown()`` such tasks go on on the global executor.
    public var executor: (any TaskExecutor)? {
        if case .success(let engine) = engine { return engine }
        return nil
    }

    /// Sends one request and returns the whole response.
    ///
    /// Any HTTP status is a response, not an error.
    ///
    /// - Throws: `CancellationError` when the Task is cancelled;
    ///   ``HTTPTransportError/unsupportedURL`` or ``HTTPTransportError/invalidRequest``
    ///   before anything is sent (`unsupportedURL` also for a redirect that
    ///   must not be followed); ``HTTPTransportError/shutDown`` after
    ///   ``shutdown()``; otherwise the ``HTTPTransportError`` saying why no
    ///   complete response arrived (`.timeout`, `.connectFailed`, `.tlsFailed`,
    ///   `.responseTooLarge`, `.connectionLost`, `.tooManyRedirects`, `.other`).
    @inline(__always) // Into its protocol witness: one async frame fewer a request (BENCHMARKS.md, issue 15, fifteenth pass).
    public func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        if request.redirects == .follow {
            return try await sendFollowingRedirects(request)
        }
        let engine = try self.engine.get()
        let inFlight = firstLoad.load(ordering: .relaxed)
        if inFlight >= secondThreadThreshold, inFlight > secondLoad.load(ordering: .relaxed),
            let second = secondEngine(besides: engine, inFlight: inFlight)
        {
            secondLoad.add(1, ordering: .relaxed)
            defer { secondLoad.subtract(1, ordering: .relaxed) }
            return try await send(request, on: second)
        }
        firstLoad.add(1, ordering: .relaxed)
        defer { firstLoad.subtract(1, ordering: .relaxed) }
        return try await send(request, on: engine)
    }

    /// The most redirects a request that follows them takes.
    static let maxRedirects = 10

    /// Sends `request` and each redirect's request in turn (``RedirectStep``:
    /// `http` and `https` only, never from `https` to `http`, the request's
    /// fields and body only to its own origin), all within the request's one timeout.
    private func sendFollowingRedirects(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        let clock = ContinuousClock()
        let timeout = Duration.milliseconds((request.timeout ?? configuration.timeout).curlMilliseconds)
        let deadline = clock.now.advanced(by: timeout)
        var current = request
        current.redirects = .never
        for _ in 0...Self.maxRedirects {
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw HTTPTransportError.timeout.with(message: "timed out following redirects from \(request.url.redactingQuery)")
            }
            current.timeout = remaining
            let response = try await send(current)
            switch RedirectStep.next(after: response, of: current, original: request) {
            case .stop:
                return response
            case .refuse(let reason):
                throw HTTPTransportError.unsupportedURL.with(message: "the request was \(reason)")
            case .follow(let next, _):
                current = next
            }
        }
        throw HTTPTransportError.tooManyRedirects.with(
            message: "more than \(Self.maxRedirects) redirects from \(request.method) \(request.url.redactingQuery)")
    }

    /// The second engine, started if need be; `nil` when this transport keeps
    /// to one thread, the second could not start, or the caller runs on the
    /// first engine's thread (a task on ``executor``, whose requests the first
    /// engine serves without waking a thread).
    ///
    /// It starts only while the first engine has no more than its share of
    /// the limits in flight (`inFlight`, give or take the callers reading it
    /// at the same moment): the first then gets that share, and so has no
    /// more transfers to any host than the share allows, and the two shares
    /// keep the limits.
    private func secondEngine(besides first: CurlEngine, inFlight: Int) -> CurlEngine? {
        guard let secondThread, !first.isCurrentThread else { return nil }
        if let running = second.load() {
            return running
        }
        let share = secondThread.firstShare
        guard inFlight <= Swift.min(share.transfersPerHost, share.connections),
            !secondFailed.load(ordering: .relaxed), !isShutDown.load(ordering: .relaxed)
        else { return nil }
        let started: CurlEngine
        do {
            started = try CurlEngine(configuration: secondThread.configuration, allowedCPUs: allowedCPUs)
        } catch {
            // Out of threads or memory: the first engine goes on alone.
            secondFailed.store(true, ordering: .relaxed)
            return nil
        }
        // Before any request goes to the second engine. Another caller that
        // started one at the same time does the same.
        first.shareLimits(transfersPerHost: share.transfersPerHost, connections: share.connections)
        let kept = second.storeIfNil(started)
        if kept !== started {
            // Another caller started one first.
            started.stop()
        }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if isShutDown.load(ordering: .sequentiallyConsistent) {
            // `shutdown()` may have looked for a second engine before this one
            // was stored: it stops now, with nothing in flight, and its thread
            // exits by itself.
            kept.stop()
        }
        return kept
    }

    // In its caller's frame: one async frame fewer a request (BENCHMARKS.md, issue 15, fifteenth pass).
    @inline(__always)
    private func send(_ request: HTTPTransportRequest, on engine: CurlEngine) async throws -> HTTPTransportResponse {
        try Task.checkCancellation()
        let transfer = try CurlTransfer(
            request: request, configuration: configuration, defaultTimeoutMilliseconds: defaultTimeoutMilliseconds)
        return try await withTaskCancellationHandler {
            let outcome: CurlEngine.LeadOutcome
            if engine.yieldsBeforeLeading {
                // One CPU: a caller may yield first, so the tasks ready on this thread go first (see `CurlEngine.claimLead()`).
                switch engine.claimLead() {
                case .afterYield:
                    await Task.yield()
                    outcome = engine.lead(transfer, afterYield: true)
                case .now:
                    outcome = engine.lead(transfer)
                case .no:
                    outcome = .declined
                }
            } else {
                outcome = engine.lead(transfer)
            }
            switch outcome {
            case .completed(let result):
                return try result.get()
            case .cancelled:
                throw CancellationError()
            case .handedOff:
                return try await CurlTransfer.withContinuation { continuation in
                    engine.attach(transfer, continuation: continuation)
                }
            case .declined:
                return try await CurlTransfer.withContinuation { continuation in
                    engine.submit(transfer, continuation: continuation)
                }
            }
        } onCancel: {
            engine.cancel(transfer)
        }
    }

    /// Fails every queued and running request with ``HTTPTransportError/shutDown``,
    /// stops the threads, frees every libcurl handle and closes every connection.
    ///
    /// Returns once all of that is done. Later sends throw
    /// ``HTTPTransportError/shutDown``. Calling it again is harmless.
    public func shutdown() async {
        isShutDown.store(true, ordering: .sequentiallyConsistent)
        if case .success(let engine) = engine {
            await engine.stopAndWait()
        }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        await second.load()?.stopAndWait()
    }
}
