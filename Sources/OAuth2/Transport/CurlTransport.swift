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
    let defaultTimeoutMilliseconds: Int
    /// The first engine: every request goes to it unless it is busy and a second may help.
    let engine: Result<CurlEngine, HTTPTransportError>
    /// The second engine, started the first time the first one is busy
    /// (``secondThreadThreshold``); never when ``secondThread`` is `nil`.
    let second = AtomicLazyReference<CurlEngine>()
    /// The second engine's settings (half of the connection limits) and the
    /// first engine's share once the second has started (the other half; it
    /// has the whole limits until then), or `nil` when this transport keeps
    /// to one thread (``Configuration/maxThreads``).
    let secondThread: (configuration: Configuration, firstShare: (transfersPerHost: Int, connections: Int))?
    /// Requests in ``send(_:)`` on the first and on the second engine.
    let firstLoad = Atomic<Int>(0)
    let secondLoad = Atomic<Int>(0)
    /// A request goes to the second engine when the first has at least this
    /// many in flight, and more than the second: 4, or 8 with one CPU, where
    /// two threads only take turns on that CPU: 8 callers run best led on
    /// the one thread, 64 best with a second from 8 in flight (measured in
    /// BENCHMARKS.md).
    let secondThreadThreshold: Int
    /// A caller has set out to start the second engine: no other does, and
    /// none tries again should it fail (one thread it is, then).
    let secondClaimed = Atomic<Bool>(false)
    /// Held while the second engine starts, and by ``shutdown()`` while it
    /// looks for it: a second engine has started before `shutdown()` looks,
    /// and is waited for, or never starts.
    let secondStart = Lock()
    /// ``shutdown()`` has begun: no second engine starts. Written under `secondStart`.
    let isShutDown = Atomic<Bool>(false)
    /// How many CPUs the engines behave as having (`nil`: as the process may use).
    let allowedCPUs: Int?

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
        // executor never start one, and with half of the limits from the
        // start, 64 of them sending to one host had 32 connections and half
        // of them waited.
        let engine = Self.startEngine(configuration, allowedCPUs: allowedCPUs)
        self.engine = engine
        // The first engine found out how many CPUs the process may use.
        let oneCPU = if case .success(let started) = engine { started.yieldsBeforeLeading } else { false }
        secondThreadThreshold = oneCPU ? 8 : 4
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
}
