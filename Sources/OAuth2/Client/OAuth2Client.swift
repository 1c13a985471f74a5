#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Logging

/// The OAuth 2.0 client of one account: it runs the flows, keeps the token,
/// signs requests and refreshes.
///
/// NXOAuth2Client's verbs in Swift form: ``token()``,
/// ``authorizationURL(redirectURI:scopes:additionalParameters:)``,
/// ``authenticate(_:)`` with an ``OAuth2Grant`` (the authorization code's
/// redirect, a password, client credentials, …), ``refreshAccessToken()``,
/// ``send(_:)``, ``revoke()`` and ``logout()``. Its state lives in a pure
/// state machine; the client takes a lock, asks the machine what to do,
/// releases the lock and does it. Thread-safe; create one per account (cheaply,
/// through ``OAuth2Provider/client(account:delegate:)``).
public final class OAuth2Client: Sendable {
    /// The account this client holds the token of; the store's key.
    public let account: String
    /// The provider this client talks to, shared with the app's other clients.
    public let provider: OAuth2Provider

    let machine = LockedValue(OAuth2StateMachine())
    private let observers: LockedValue<Observers>

    private struct Observers {
        weak var delegate: (any OAuth2ClientDelegate)?
        var streams: [Int: AsyncStream<OAuth2Event>.Continuation] = [:]
        var nextStreamID = 0
    }

    init(provider: OAuth2Provider, account: String, delegate: (any OAuth2ClientDelegate)?) {
        self.provider = provider
        self.account = account
        self.observers = LockedValue(Observers(delegate: delegate))
    }

    deinit {
        observers.withLock { observers in
            for continuation in observers.streams.values { continuation.finish() }
        }
    }

    /// The configuration of the provider.
    public var configuration: OAuth2Configuration { provider.configuration }

    /// The delegate, held weakly.
    public var delegate: (any OAuth2ClientDelegate)? {
        get { observers.withLock { $0.delegate } }
        set { observers.withLock { $0.delegate = newValue } }
    }

    /// The same events the delegate hears, as a stream. Each access makes a
    /// new subscription that ends when the client is released or the
    /// consumer stops; it keeps the 100 newest events a slow consumer has not read.
    public var events: AsyncStream<OAuth2Event> {
        let (stream, continuation) = AsyncStream<OAuth2Event>.makeStream(bufferingPolicy: .bufferingNewest(100))
        let id = observers.withLock { observers in
            let id = observers.nextStreamID
            observers.nextStreamID += 1
            observers.streams[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// The token held in memory, without reading the store or refreshing.
    public var currentToken: AccessToken? {
        machine.withLock { $0.currentToken }
    }

    var logger: Logger {
        var logger = provider.logger
        logger[metadataKey: "oauth2.account"] = "\(account)"
        return logger
    }

    /// Tells the delegate and the streams, outside every lock.
    func notify(_ notification: OAuth2StateMachine.Notification?) {
        guard let notification else { return }
        let (delegate, streams) = observers.withLock { ($0.delegate, Array($0.streams.values)) }
        let event = notification.event
        for stream in streams { stream.yield(event) }
        guard let delegate else { return }
        switch notification {
        case .needsAuthentication: delegate.oauth2ClientNeedsAuthentication(self)
        case .gotAccessToken(let token): delegate.oauth2Client(self, didGetAccessToken: token)
        case .refreshed(let token): delegate.oauth2Client(self, didRefreshAccessToken: token)
        case .lost(let error): delegate.oauth2Client(self, didLoseAccessTokenWithError: error)
        case .failed(let error): delegate.oauth2Client(self, didFailToGetAccessTokenWithError: error)
        case .storeFailed(let error): delegate.oauth2Client(self, didFailToStoreAccessTokenWithError: error)
        case .idTokenDeferred(let error): delegate.oauth2Client(self, didDeferIDTokenVerificationWithError: error)
        }
    }

    // MARK: - Access

    /// A token to use now: valid beyond the expiry skew, refreshed (or
    /// renewed by its grant) first when needed. The one way to get a token;
    /// ``currentToken`` reads what is held without I/O, ``refreshAccessToken()``
    /// forces a refresh.
    ///
    /// - Throws: ``OAuth2Error`` `not_authenticated` when there is no token
    ///   (the delegate hears "needs authentication"), `reauthorization_required`
    ///   when the refresh found the grant gone, `provider_mismatch` when the
    ///   stored token belongs to another provider or client, the code of a
    ///   refused ID token (`subject_mismatch`, `invalid_signature`, …) while
    ///   the account's token is held unused (``UnverifiedIDToken``), or the refresh's error.
    public func token() async throws(OAuth2Error) -> AccessToken {
        while true {
            switch tokenDecision() {
            case .use(let token):
                if provider.vault.unsavedNeedsRetry(account: account), let error = await provider.vault.retryUnsaved(account: account) {
                    logger.debug("the token store still cannot save the account's token", metadata: ["oauth2.error": "\(error.code)"])
                }
                return token
            case .load:
                try await loadIfNeeded()
            case .refresh:
                return try await refresh(failedToken: nil, force: false, automatic: true)
            case .notAuthenticated:
                notify(.needsAuthentication)
                throw OAuth2Error(code: .notAuthenticated, message: "no token is stored for account \(account)")
            case .refused(let error):
                throw error
            }
        }
    }

    /// What ``token()`` returns at once, without suspending: the held token
    /// when it is valid beyond the skew and no unsaved token waits for
    /// another save; `nil` when ``token()`` has work to do (load, refresh,
    /// retry a save, or fail).
    func tokenReadyNow() -> AccessToken? {
        guard case .use(let token) = tokenDecision(), !provider.vault.unsavedNeedsRetry(account: account) else { return nil }
        return token
    }

    /// What the held token calls for now (the state machine's `tokenNeeded`),
    /// for ``token()`` and ``tokenReadyNow()`` alike.
    private func tokenDecision() -> OAuth2StateMachine.TokenDecision {
        machine.withLock {
            $0.tokenNeeded(
                now: provider.clock.now(), skewSeconds: provider.expirySkewSeconds, renewableGrantTypes: provider.renewableGrantTypes)
        }
    }

    /// Reads the store once, unless a token is already known.
    ///
    /// A token stored before tokens recorded their provider (no
    /// ``AccessToken/binding``) is refused (`provider_mismatch`) unless the
    /// configuration adopts such tokens (``OAuth2Configuration/adoptsTokensStoredWithoutBinding``):
    /// then it is saved again with its binding, once, under the account lock.
    func loadIfNeeded() async throws(OAuth2Error) {
        guard !machine.withLock({ $0.isLoaded }) else { return }
        var token = try await provider.vault.load(account: account)
        if let legacy = token, legacy.binding == nil {
            token = await provider.vault.recordBinding(of: legacy, account: account)
        }
        machine.withLock { $0.loaded(token) }
    }

    /// Saves the token the store could not save earlier, if there is one.
    ///
    /// After a failed save (the delegate heard "did fail to store") the client
    /// keeps the token in memory, tries again on the next use, and keeps the
    /// account's store lock meanwhile, so that no other process spends the
    /// refresh token the provider has rotated. A process about to exit calls
    /// this so that it does not take the only copy of that refresh token with
    /// it: with `waitingUpTo`, it tries again (every 100 ms, doubling up to
    /// 2 s) until the store takes the token or that time has passed.
    ///
    /// - Throws: ``OAuth2Error`` `store_error` (or `lock_timeout`) when the
    ///   token still cannot be saved; it stays in memory.
    public func saveUnsavedToken(waitingUpTo wait: Duration = .zero) async throws(OAuth2Error) {
        let deadline = ContinuousClock.now + wait
        var delay: Duration = .milliseconds(100)
        while let error = await provider.vault.retryUnsaved(account: account) {
            guard ContinuousClock.now + delay <= deadline else { throw error }
            logger.debug("the token store still cannot save the account's token; trying again", metadata: ["oauth2.error": "\(error.code)"])
            do {
                try await Task.sleep(for: delay)
            } catch {
                throw OAuth2Error(code: .cancelled, message: "waiting for the token store to save the token was cancelled")
            }
            delay = min(delay * 2, .seconds(2))
        }
    }
}
