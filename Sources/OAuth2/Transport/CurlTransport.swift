#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The default ``HTTPTransport``: libcurl, one multi handle, one thread.
///
/// Create one transport and share it: every client, every account and every
/// task can send through it at once. Connections are kept alive and reused
/// (HTTP/1.1 keep-alive, HTTP/2 when an `https` server offers it).
///
/// - A request goes to a dedicated thread that drives libcurl; the caller's
///   task waits without blocking a thread. When nothing else is in flight, the
///   caller first drives its request itself for a moment
///   (``Configuration/callerDrivenWait``): a quick answer then costs no thread
///   hand-off. Tasks may also run on the transport's thread (``executor``),
///   which saves the two hand-offs of every other request.
/// - Only absolute `http` and `https` URLs are sent, TLS certificates are
///   always verified, redirects are followed only when the request asks, and
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
/// thread in the background: nothing can be in flight then, since every
/// `send` keeps the transport alive until it returns.
public final class CurlTransport: HTTPTransport, Sendable {
    /// The settings this transport was created with.
    public let configuration: Configuration
    private let engine: Result<CurlEngine, HTTPTransportError>

    /// Creates a transport and starts its thread; the first transport of the
    /// process opens libcurl (`libcurl.so.4`), which is not linked.
    ///
    /// Should libcurl or the thread fail to start (out of memory, libcurl
    /// missing or broken), every `send` throws ``HTTPTransportError/other(_:)``
    /// saying why.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        engine = Self.startEngine(configuration, allowedCPUs: nil)
    }

    /// A transport that behaves as in a process allowed on `allowedCPUs`
    /// CPUs, whatever this one may use (`nil`: as it may): with 1, callers
    /// yield before they lead (``Configuration/callerDrivenWait``). For tests.
    package init(configuration: Configuration, allowedCPUs: Int?) {
        self.configuration = configuration
        engine = Self.startEngine(configuration, allowedCPUs: allowedCPUs)
    }

    /// Whether callers do not lead for now: after a lead gave way to other
    /// requests, or ran out of time before its answer came
    /// (``Configuration/callerDrivenWait``). For tests.
    package var leadsArePaused: Bool {
        if case .success(let engine) = engine { return engine.leadsArePaused }
        return false
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
    /// core. After ``shutdown()`` such tasks go on on the global executor.
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
    ///   before anything is sent; ``HTTPTransportError/shutDown`` after
    ///   ``shutdown()``; otherwise the ``HTTPTransportError`` saying why no
    ///   complete response arrived (`.timeout`, `.connectFailed`, `.tlsFailed`,
    ///   `.responseTooLarge`, `.connectionLost`, `.tooManyRedirects`, `.other`).
    public func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        let engine = try self.engine.get()
        try Task.checkCancellation()
        let transfer = try CurlTransfer(request: request, configuration: configuration)
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
    /// stops the thread, frees every libcurl handle and closes every connection.
    ///
    /// Returns once all of that is done. Later sends throw
    /// ``HTTPTransportError/shutDown``. Calling it again is harmless.
    public func shutdown() async {
        if case .success(let engine) = engine {
            await engine.stopAndWait()
        }
    }
}
