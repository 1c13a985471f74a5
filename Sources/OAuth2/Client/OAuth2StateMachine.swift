#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The token lifecycle of one ``OAuth2Client``, as a pure state machine.
///
/// No I/O, no locks, no continuations: the client takes its lock, calls one
/// event method, releases the lock, then performs the returned action
/// (async-http-client's pattern). Every event method documents the
/// transitions it makes.
struct OAuth2StateMachine: Sendable {
    /// Where the client stands.
    enum State: Sendable {
        /// The store has not been read yet.
        /// → `authorized` or `noToken` (``loaded(_:now:skew:)``), or any state a flow sets.
        case unloaded
        /// No token is held.
        /// → `authorizationPending` (a user-agent flow starts), `exchanging` (a grant request),
        ///   `authorized` (a token is loaded or adopted).
        case noToken
        /// A user-agent flow was started; the redirect is awaited.
        /// The pending authorization carries state, PKCE verifier, redirect URI and issuer.
        /// → `exchanging` (its redirect arrives), `authorizationPending` (a newer flow replaces it),
        ///   `failed` (the redirect was rejected).
        case authorizationPending(PendingAuthorization, previous: AccessToken?)
        /// A grant request (code exchange, password, client credentials, assertion, device) is in flight.
        /// → `authorized` (``grantSucceeded(_:)``), `failed` (``grantFailed(_:)``).
        case exchanging(previous: AccessToken?)
        /// A token is held.
        /// → `refreshing`, `noToken` (lost or logged out), `authorized` (a newer token is adopted).
        case authorized(AccessToken)
        /// A refresh is in flight; the old token is kept until it ends.
        /// → `authorized` (success), `noToken` (the grant is gone), `failed` (5xx, transport).
        case refreshing(AccessToken)
        /// The last attempt failed. A token that was held is kept: a 5xx or a
        /// dropped connection is not a loss.
        /// → every state a new attempt leads to.
        case failed(OAuth2Error, token: AccessToken?)
    }

    /// What the client should do to obtain a token to sign a request with.
    enum TokenDecision: Sendable, Equatable {
        /// Sign with this token.
        case use(AccessToken)
        /// Read the store first, then ask again.
        case load
        /// The token expires within the skew and can be refreshed (or renewed
        /// by running its grant again).
        case refresh(AccessToken)
        /// No token: tell the delegate authentication is needed, and fail the request.
        case notAuthenticated
        /// The token is held and never used: its last refresh's ID token was
        /// refused (``UnverifiedIDToken``). Fail the request with the error.
        case refused(OAuth2Error)
    }

    /// A notification for the delegate and the event stream.
    enum Notification: Sendable, Equatable {
        case needsAuthentication
        case gotAccessToken(AccessToken)
        case refreshed(AccessToken)
        case lost(OAuth2Error?)
        case failed(OAuth2Error)
        /// A token the provider issued could not be saved; it is kept in memory.
        case storeFailed(OAuth2Error)
        /// A refresh's ID token could not be verified now; the new token is used.
        case idTokenDeferred(OAuth2Error)
    }

    private(set) var state: State = .unloaded
    /// Whether the store has been read. Kept apart from `state`: a flow may
    /// start before the first read, and must not hide the stored token.
    private(set) var hasReadStore = false

    /// The token currently held, in whatever state.
    var currentToken: AccessToken? {
        // The usual state first: matched in place, where the switch below
        // copies the whole state (a pending authorization's strings and all)
        // to match it, on every signed request.
        if case .authorized(let token) = state { return token }
        switch state {
        case .unloaded, .noToken: return nil
        case .authorizationPending(_, let previous), .exchanging(let previous): return previous
        case .authorized(let token), .refreshing(let token): return token
        case .failed(_, let token): return token
        }
    }

    /// Whether a token is held, in whatever state; unlike `currentToken != nil`,
    /// without a copy of it (a token is a dozen references to retain and
    /// release, and every signed request of a client that obtained its token
    /// by a grant, never reading the store, asks).
    private var holdsToken: Bool {
        switch state {
        case .unloaded, .noToken, .authorizationPending(_, nil), .exchanging(nil), .failed(_, nil): false
        case .authorizationPending, .exchanging, .authorized, .refreshing, .failed: true
        }
    }

    /// Whether the client knows its token: the store was read, or a token was obtained since.
    var isLoaded: Bool {
        hasReadStore || holdsToken
    }

    // MARK: - Obtaining a token

    /// A request needs a token.
    ///
    /// `unloaded` → `.load` (no change). A held token valid beyond the skew → `.use`.
    /// One expiring within the skew that can be renewed (a refresh token, or
    /// a grant of `renewableGrantTypes`, such as client credentials) →
    /// `.refresh` (the coordinator makes it single-flight). One expiring that
    /// cannot be renewed is used anyway: the resource server's 401 decides.
    /// No token → `.notAuthenticated`. A token whose refresh brought a
    /// refused ID token → `.refused`, whatever its expiry.
    ///
    /// The skew is in seconds, as the provider keeps it (converted from
    /// the configuration's `Duration` once).
    func tokenNeeded(now: Date, skewSeconds: Double, renewableGrantTypes: Set<String> = []) -> TokenDecision {
        guard isLoaded else { return .load }
        guard let token = currentToken else { return .notAuthenticated }
        if let refusal = Self.refusal(of: token) { return .refused(refusal) }
        if token.isExpired(at: now, skewSeconds: skewSeconds), Self.canRenew(token, renewableGrantTypes) {
            return .refresh(token)
        }
        return .use(token)
    }

    /// Why `token` is never used, when its last refresh's ID token was refused.
    static func refusal(of token: AccessToken) -> OAuth2Error? {
        guard let unverified = token.unverifiedIDToken, unverified.isRefused else { return nil }
        return unverified.refusal
    }

    /// Whether `token` can be replaced without the user: by its refresh
    /// token, or by running the grant that obtained it again.
    static func canRenew(_ token: AccessToken, _ renewableGrantTypes: Set<String>) -> Bool {
        if token.refreshToken != nil { return true }
        guard let grant = token.grant else { return false }
        return renewableGrantTypes.contains(grant.type)
    }

    /// The store was read.
    ///
    /// `unloaded` → `authorized(token)` or `noToken`. A flow started before
    /// the read (`authorizationPending`, `exchanging`, `failed` without a
    /// token) keeps its state and gains the stored token as the one held
    /// meanwhile. A token the client obtained itself is newer and wins.
    mutating func loaded(_ token: AccessToken?) {
        hasReadStore = true
        switch state {
        case .unloaded:
            state = token.map(State.authorized) ?? .noToken
        case .authorizationPending(let pending, nil):
            state = .authorizationPending(pending, previous: token)
        case .exchanging(nil):
            state = .exchanging(previous: token)
        case .failed(let error, nil):
            state = .failed(error, token: token)
        case .noToken, .authorizationPending, .exchanging, .authorized, .refreshing, .failed:
            break
        }
    }

    // MARK: - The user-agent flow

    /// A user-agent flow started.
    ///
    /// Any state → `authorizationPending(pending)`; a held token is kept
    /// (re-authorizing does not log out), an older pending flow is replaced.
    mutating func authorizationStarted(_ pending: PendingAuthorization) {
        state = .authorizationPending(pending, previous: currentToken)
    }

    /// The pending authorization held, if a flow is pending.
    var pendingAuthorization: PendingAuthorization? {
        if case .authorizationPending(let pending, _) = state { return pending }
        return nil
    }

    // MARK: - Grants

    /// A grant request (code exchange or another grant) is being sent.
    ///
    /// Any state → `exchanging`, keeping a held token until the new one arrives.
    mutating func grantStarted() {
        state = .exchanging(previous: currentToken)
    }

    /// The grant returned a token, already saved.
    ///
    /// `exchanging` (or any) → `authorized(token)`; notify `.gotAccessToken`.
    mutating func grantSucceeded(_ token: AccessToken) -> Notification {
        state = .authorized(token)
        return .gotAccessToken(token)
    }

    /// The grant failed.
    ///
    /// Any → `failed(error, token: previous)`; notify `.failed`.
    mutating func grantFailed(_ error: OAuth2Error) -> Notification {
        state = .failed(error, token: currentToken)
        return .failed(error)
    }

    /// The redirect of a user-agent flow was rejected before any request.
    ///
    /// `authorizationPending` → `failed`; notify `.failed`.
    mutating func redirectRejected(_ error: OAuth2Error) -> Notification {
        grantFailed(error)
    }

    // MARK: - Refresh

    /// This client is about to wait for a refresh (its own, or one another
    /// client of the account started).
    ///
    /// `authorized` / `failed` with a token → `refreshing(token)`; other states unchanged.
    mutating func refreshStarted() {
        if let token = currentToken {
            switch state {
            case .authorized, .failed, .refreshing: state = .refreshing(token)
            case .unloaded, .noToken, .authorizationPending, .exchanging: break
            }
        }
    }

    /// A refresh ended with a token (saved by whoever ran it).
    ///
    /// → `authorized(token)` (a pending flow is kept pending). The client that
    /// ran the refresh (`leader`) notifies `.refreshed`, or nothing when the
    /// store already held a newer token; the others adopt it silently.
    mutating func refreshSucceeded(_ token: AccessToken, leader: Bool, refreshed: Bool) -> Notification? {
        if case .authorizationPending = state {
            // A flow the user started stays pending; the token is still adopted.
            if case .authorizationPending(let pending, _) = state {
                state = .authorizationPending(pending, previous: token)
            }
        } else {
            state = .authorized(token)
        }
        return leader && refreshed ? .refreshed(token) : nil
    }

    /// A refresh failed.
    ///
    /// The grant is gone (`lost`: `invalid_grant`, or the token was deleted
    /// meanwhile) → `noToken`; notify `.lost` (leader) — the store entry was
    /// deleted by the leader. Anything else (5xx, transport) → `failed` with
    /// the token kept; notify `.failed` (leader). A refused ID token → `failed`
    /// holding the token now stored (`held`), which is never used.
    mutating func refreshFailed(_ error: OAuth2Error, lost: Bool, leader: Bool, held: AccessToken? = nil) -> Notification? {
        if lost {
            state = .noToken
            return leader ? .lost(error) : nil
        }
        state = .failed(error, token: held ?? currentToken)
        return leader ? .failed(error) : nil
    }

    // MARK: - Losing the token

    /// The token was rejected after a refresh and a retry, deleted, or logged out.
    ///
    /// Any → `noToken`; notify `.lost` with the reason (`nil` for a logout).
    mutating func tokenLost(_ reason: OAuth2Error?) -> Notification {
        state = .noToken
        return .lost(reason)
    }
}
