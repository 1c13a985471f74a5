#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The provider's JSON Web Key Set (`jwks_uri`), fetched when first needed,
/// kept for ``OpenIDSettings/keySetMaxAge``, and fetched again early when a
/// token names a key the set does not have: that is how a key rotation at the
/// provider is picked up without a restart.
///
/// Fetches are single-flight (concurrent sign-ins wait for one request) and
/// rate-limited: after a fetch, another one caused by an unknown key, or a
/// retry after a failed fetch, waits ``OpenIDSettings/keySetRefetchInterval``;
/// meanwhile the last result (the set, or the failure) stands. That holds
/// when the cached set has expired too: an expired set is fetched again at
/// once only if the last fetch worked, and while the retries wait the failure
/// stands, never the expired set. So a stream of forged tokens with made-up
/// `kid`s, or a key set endpoint that is down, costs the provider at most one
/// request per interval.
final class KeySetCache: Sendable {
    let url: URL
    private let transport: any HTTPTransport
    private let clock: any OAuth2Clock
    private let maxAge: Duration
    private let refetchInterval: Duration
    private let timeout: Duration
    private let maxSize: Int
    private let state = LockedValue(State())

    private struct State: Sendable {
        /// The last set fetched, and when.
        var keySet: JSONWebKeySet?
        var fetchedAt: Date?
        /// When the last fetch started, and how it failed if it did.
        var lastAttempt: Date?
        var lastFailure: OAuth2Error?
        /// The fetch under way, which every caller awaits.
        var inFlight: Task<Result<JSONWebKeySet, OAuth2Error>, Never>?
    }

    init(settings: OpenIDSettings, transport: any HTTPTransport, clock: any OAuth2Clock, timeout: Duration, maxSize: Int) {
        self.url = settings.jwksURI
        self.transport = transport
        self.clock = clock
        self.maxAge = settings.keySetMaxAge
        self.refetchInterval = settings.keySetRefetchInterval
        self.timeout = timeout
        self.maxSize = maxSize
    }

    /// Verifies `jws` with the set, fetching it when there is none or it is
    /// too old, and once more (rate permitting) when no key matches.
    ///
    /// - Throws: the JWS's errors (`unsupported_algorithm`, `invalid_signature`,
    ///   `unknown_signing_key`); the fetch's (`invalid_jwks`, `http_error`,
    ///   `timeout`, `transport_error`, …) when the set must be fetched (there is
    ///   none yet, or the cached one is older than the max age) and cannot be:
    ///   an expired set is not trusted past its age, since the provider may
    ///   have withdrawn a key from it.
    func verify(_ jws: CompactJWS, allowedAlgorithms: Set<JWSAlgorithm>) async throws(OAuth2Error) -> JSONWebKey {
        let keySet = try await currentSet()
        do throws(OAuth2Error) {
            return try jws.verify(with: keySet, allowedAlgorithms: allowedAlgorithms)
        } catch  where error.code == .unknownSigningKey {
            guard let fresh = try await fetch(force: false, unlessNewerThan: keySet) else {
                throw OAuth2Error(
                    code: .unknownSigningKey,
                    message:
                        "\(error.message); the key set was fetched less than \(refetchInterval.secondsDescription) ago, so it is not fetched again yet"
                )
            }
            return try jws.verify(with: fresh, allowedAlgorithms: allowedAlgorithms)
        }
    }

    /// The set to verify with: the cached one while younger than the max age.
    private func currentSet() async throws(OAuth2Error) -> JSONWebKeySet {
        if let cached = youngSet() { return cached }
        // An expired set is replaced at once after a fetch that worked (a max
        // age shorter than the interval must not leave the client without
        // keys); after a failed one, like a missing set, only within the rate
        // limit: otherwise every token would cost a request to an endpoint
        // that is down.
        if let keySet = try await fetch(force: state.withLock { $0.keySet != nil }, unlessNewerThan: nil) {
            return keySet
        }
        // Rate-limited: a set someone else fetched meanwhile, if young enough;
        // never the expired one.
        if let fetchedMeanwhile = youngSet() { return fetchedMeanwhile }
        throw state.withLock { $0.lastFailure }
            ?? OAuth2Error(code: .invalidJWKS, message: "the provider's key set could not be fetched")
    }

    /// The cached set while younger than the max age.
    private func youngSet() -> JSONWebKeySet? {
        let now = clock.now()
        return state.withLock { state -> JSONWebKeySet? in
            guard let keySet = state.keySet, let fetchedAt = state.fetchedAt,
                now >= fetchedAt, now.timeIntervalSince(fetchedAt) < maxAge.timeInterval
            else { return nil }
            return keySet
        }
    }

    /// Fetches the set, or joins the fetch under way.
    ///
    /// - Parameters:
    ///   - force: fetch even within the rate limit (the cached set expired),
    ///     unless the last fetch, within the interval, failed.
    ///   - unlessNewerThan: the set the caller saw; when the cache holds another
    ///     one already (someone fetched meanwhile), that one is returned.
    /// - Returns: the fetched set, or `nil` when the rate limit forbids a
    ///   fetch now (the last failure is thrown instead, if the last fetch failed).
    private func fetch(force: Bool, unlessNewerThan seen: JSONWebKeySet?) async throws(OAuth2Error) -> JSONWebKeySet? {
        let now = clock.now()
        enum Step {
            case use(JSONWebKeySet)
            case wait(Task<Result<JSONWebKeySet, OAuth2Error>, Never>)
            case limited(OAuth2Error?)
        }
        let step: Step = state.withLock { state in
            if let task = state.inFlight { return .wait(task) }
            if let seen, let current = state.keySet, current != seen { return .use(current) }
            if !force || state.lastFailure != nil, let last = state.lastAttempt, now >= last,
                now.timeIntervalSince(last) < refetchInterval.timeInterval
            {
                return .limited(state.keySet == nil || force ? state.lastFailure : nil)
            }
            state.lastAttempt = now
            let task = Task { await self.download() }
            state.inFlight = task
            return .wait(task)
        }
        switch step {
        case .use(let keySet):
            return keySet
        case .limited(let failure):
            if let failure { throw failure }
            return nil
        case .wait(let task):
            let result = await task.value
            state.withLock { state in
                // The first waiter to resume records the result; the others find it recorded.
                guard state.inFlight == task else { return }
                state.inFlight = nil
                switch result {
                case .success(let keySet):
                    state.keySet = keySet
                    state.fetchedAt = clock.now()
                    state.lastFailure = nil
                case .failure(let error):
                    state.lastFailure = error
                }
            }
            return try result.get()
        }
    }

    /// One GET of the key set; never follows a redirect (keys served from
    /// elsewhere are not the provider's).
    private func download() async -> Result<JSONWebKeySet, OAuth2Error> {
        let request = HTTPTransportRequest.providerDocument(
            url, accept: "application/jwk-set+json, application/json", timeout: timeout, maxResponseSize: maxSize)
        do throws(OAuth2Error) {
            let response = try await OAuth2Error.performing(request, on: transport)
            try ProviderResponse.requireSuccess(response, endpoint: "JWKS endpoint", maxBodySize: maxSize, now: clock.now())
            return .success(try JSONWebKeySet.parse(response.body, maxSize: maxSize))
        } catch {
            return .failure(error)
        }
    }
}
