public import CoreMetrics
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import Tracing

/// Where the library's metrics (swift-metrics) and spans
/// (swift-distributed-tracing) go: by default the process's bootstrapped
/// backends, read at each use, so both are no-ops until the app calls
/// `MetricsSystem.bootstrap` or `InstrumentationSystem.bootstrap`.
///
/// Give a provider its own factory or tracer to keep its measurements apart,
/// as tests do with `MetricsTestKit.TestMetrics` and `InMemoryTracing.InMemoryTracer`.
///
/// Metrics (labels are fixed; dimension values are grant type names,
/// outcomes and error codes, never a token, a secret, a URL or an account):
///
/// | label | kind | dimensions |
/// |---|---|---|
/// | `oauth2_token_requests_total` | counter | `grant_type`, `outcome` (`success` or the error code) |
/// | `oauth2_token_request_duration_seconds` | timer | `grant_type` |
/// | `oauth2_refreshes_total` | counter | `outcome`: `refreshed`, `reused` (another caller or process had stored a new token), or the error code |
/// | `oauth2_lock_wait_seconds` | timer | none: waits for the store's account lock |
/// | `oauth2_unauthorized_retries_total` | counter | `outcome`: `accepted`, `rejected` (a 401 after the refresh), or the error code |
///
/// A provider's error code is its own (GitHub's `bad_verification_code`), so
/// the `outcome` values are bounded: the first 64 distinct values one
/// telemetry (``global``, for most apps) records are kept, and any later new
/// one is `other_error`. A provider that answers with a new code every time
/// cannot make a backend keep a series for each.
///
/// Spans: `oauth2.token_request` (kind client) around each token-endpoint
/// call, with `oauth2.grant_type`, `http.request.method`, `server.address`,
/// `server.port`, `http.response.status_code` and, on failure, `error.type`
/// (the error code); `oauth2.signed_request` (kind client) around
/// ``OAuth2Client/send(_:)`` and ``SigningTransport``, with
/// `http.request.method`, `url.scheme`, `server.address`, `server.port`,
/// `http.response.status_code`, `oauth2.retried` and `error.type`, and for a
/// DPoP-signed request `oauth2.dpop` (true), `oauth2.dpop.algorithm` (the
/// proofs' `alg`) and `oauth2.dpop.nonce_retried` when a `use_dpop_nonce`
/// was answered. No span carries a URL's path or query, a header, a body, a
/// proof, a nonce or a key. The signed request
/// carries the span's context in its headers (the tracer's propagation,
/// such as W3C `traceparent`).
public struct OAuth2Telemetry: Sendable {
    /// What the copies of this telemetry share. One reference: every signed
    /// request copies its provider's telemetry, and two optional existentials
    /// copied and destroyed field by field cost more than one retain.
    private final class Storage: Sendable {
        let metricsFactory: (any MetricsFactory)?
        let tracerOverride: (any Tracer)?
        /// Whether there is a `tracerOverride`, read without copying it.
        let hasTracerOverride: Bool
        /// The `outcome` values recorded so far (``outcomeLabel(_:)``).
        let outcomesSeen = LockedValue<Set<String>>([])

        init(metricsFactory: (any MetricsFactory)?, tracerOverride: (any Tracer)?) {
            self.metricsFactory = metricsFactory
            self.tracerOverride = tracerOverride
            hasTracerOverride = tracerOverride != nil
        }
    }

    private let storage: Storage
    private var metricsFactory: (any MetricsFactory)? { storage.metricsFactory }
    private var tracerOverride: (any Tracer)? { storage.tracerOverride }
    private var outcomesSeen: LockedValue<Set<String>> { storage.outcomesSeen }

    /// The process's bootstrapped backends (`MetricsSystem.factory`, `InstrumentationSystem.tracer`).
    public static let global = OAuth2Telemetry(metricsFactory: nil, tracer: nil)

    /// Sends metrics to `metricsFactory` and spans to `tracer`; `nil` for either means the global one.
    public init(metricsFactory: (any MetricsFactory)? = nil, tracer: (any Tracer)? = nil) {
        storage = Storage(metricsFactory: metricsFactory, tracerOverride: tracer)
    }

    var factory: any MetricsFactory { metricsFactory ?? MetricsSystem.factory }
    /// The tracer spans go to, or `nil` while there is none to record them:
    /// no tracer given, and no instrument bootstrapped (nor bound to the task).
    ///
    /// `InstrumentationSystem.tracer` finds the tracer with two casts to a
    /// protocol, each a conformance lookup, on every call: about 2% of a
    /// signed request's CPU time on one CPU, for a tracer most processes
    /// never bootstrap. The instrument of a process that bootstrapped none is
    /// `NoOpInstrument`, known by its type alone: its metadata compared, not
    /// cast to (`is` is a dynamic cast, 130 instructions a request).
    var activeTracer: (any Tracer)? {
        if storage.hasTracerOverride { return tracerOverride }
        if type(of: InstrumentationSystem.instrument) == NoOpInstrument.self { return nil }
        return InstrumentationSystem.tracer
    }

    // MARK: - Metrics

    enum Label {
        static let tokenRequests = "oauth2_token_requests_total"
        static let tokenRequestDuration = "oauth2_token_request_duration_seconds"
        static let refreshes = "oauth2_refreshes_total"
        static let lockWait = "oauth2_lock_wait_seconds"
        static let unauthorizedRetries = "oauth2_unauthorized_retries_total"
    }

    /// The most distinct `outcome` values one telemetry records; later new ones are ``otherOutcome``.
    static let maxOutcomes = 64
    static let otherOutcome = "other_error"

    /// `outcome` as a dimension value: itself while this telemetry has
    /// recorded fewer than ``maxOutcomes`` distinct ones (or this one
    /// before), else ``otherOutcome``.
    func outcomeLabel(_ outcome: String) -> String {
        outcomesSeen.withLock { seen in
            if seen.contains(outcome) { return outcome }
            guard seen.count < Self.maxOutcomes else { return Self.otherOutcome }
            seen.insert(outcome)
            return outcome
        }
    }

    func tokenRequestFinished(grantType: String, outcome: String, duration: Duration) {
        let dimensions = [("grant_type", grantType), ("outcome", outcomeLabel(outcome))]
        Counter(label: Label.tokenRequests, dimensions: dimensions, factory: factory).increment()
        CoreMetrics.Timer(label: Label.tokenRequestDuration, dimensions: [("grant_type", grantType)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    func refreshFinished(outcome: String) {
        Counter(label: Label.refreshes, dimensions: [("outcome", outcomeLabel(outcome))], factory: factory).increment()
    }

    func lockWaited(_ duration: Duration) {
        CoreMetrics.Timer(label: Label.lockWait, factory: factory).recordNanoseconds(duration.nanoseconds)
    }

    func unauthorizedRetryFinished(outcome: String) {
        Counter(label: Label.unauthorizedRetries, dimensions: [("outcome", outcomeLabel(outcome))], factory: factory).increment()
    }

    // MARK: - Spans

    /// Runs `body` in a client span named `name`, the span current for what
    /// `body` does (a refresh inside a signed request is its child).
    ///
    /// The tracer is looked up once (``activeTracer``); until the app
    /// bootstraps one there is no span at all, and a span that does not
    /// record costs neither attributes nor a task-local context: a signed
    /// request pays next to nothing for tracing it does not use.
    ///
    /// What `body` throws is rethrown as it is, the span marked failed with
    /// `errorType` of it (an error code, never a message).
    @inline(__always) // Every signed request runs in one: inlined, it costs no async frame of its own.
    func withClientSpan<Value, Failure: Error>(
        _ name: String,
        url: URL,
        method: HTTPRequest.Method,
        errorType: (Failure) -> String,
        _ body: (ClientSpan) async throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        guard let tracer = activeTracer else {
            // Nothing records: no span to start, end or make current.
            return try await body(ClientSpan(recording: nil))
        }
        let span = tracer.startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        defer { span.end() }
        let outcome: Result<Value, Failure>
        if span.isRecording {
            span.attributes["http.request.method"] = method.rawValue
            let scheme = url.scheme?.lowercased()
            span.attributes["url.scheme"] = scheme
            span.attributes["server.address"] = url.host
            if let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil) {
                span.attributes["server.port"] = port
            }
            let clientSpan = ClientSpan(recording: ClientSpan.Recording(span: span, tracer: tracer))
            outcome = await ServiceContext.$current.withValue(span.context) { await Self.outcome(of: body, in: clientSpan) }
        } else {
            outcome = await Self.outcome(of: body, in: ClientSpan(recording: nil))
        }
        switch outcome {
        case .success(let value):
            return value
        case .failure(let error):
            if span.isRecording {
                span.attributes["error.type"] = errorType(error)
                span.setStatus(SpanStatus(code: .error))
            }
            throw error
        }
    }

    /// `body`'s value or typed error, as a value: the task-local scope takes
    /// an untyped closure, which would lose the error's type.
    private static func outcome<Value, Failure: Error>(
        of body: (ClientSpan) async throws(Failure) -> Value, in span: ClientSpan
    ) async -> Result<Value, Failure> {
        do throws(Failure) {
            return .success(try await body(span))
        } catch {
            return .failure(error)
        }
    }
}

/// A client span as the library's code sees it: `nil` when it does not
/// record, so that nothing is computed for it.
struct ClientSpan {
    /// A recording span and its tracer.
    final class Recording {
        let span: any Span
        let tracer: any Tracer

        init(span: any Span, tracer: any Tracer) {
            self.span = span
            self.tracer = tracer
        }
    }

    /// `nil` unless the span records: an optional reference, so that a
    /// request without a span copies and checks a pointer, not two
    /// existentials through the runtime's generic witnesses.
    let recording: Recording?

    /// Sets an attribute of a recording span.
    func set(_ key: String, _ value: @autoclosure () -> any SpanAttributeConvertible) {
        recording?.span.attributes[key] = value().toSpanAttribute()
    }

    /// Puts the span's context into `headers`, as the tracer propagates it
    /// (`traceparent`, …); nothing for a span that does not record.
    func inject(into headers: inout HTTPFields) {
        guard let recording else { return }
        recording.tracer.inject(recording.span.context, into: &headers, using: HTTPFieldsInjector())
    }
}

/// Writes a tracer's propagation fields (`traceparent`, `tracestate`, …) into request headers.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}
