import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a refresh produced no token, and whether the grant is gone (`lost`:
/// the stored token was deleted) or merely unreachable (kept).
struct RefreshFailure: Error {
    var error: OAuth2Error
    var lost: Bool
    /// The account's token as stored now, when the refresh replaced it with
    /// one that is held but not used (its ID token was refused).
    var held: AccessToken? = nil
}

extension OAuth2Client {
    /// Refreshes the access token now, whatever its expiry.
    ///
    /// Normally unnecessary: ``send(_:)`` refreshes on its own. Single-flight
    /// per account: concurrent calls share one token request, and other
    /// processes sharing the store wait for it (the store's account lock). A
    /// new refresh token replaces the old one; when the provider sends none,
    /// the old one is kept. A token without a refresh token that a renewable
    /// grant obtained (client credentials, or the configuration's
    /// ``AssertionGrant``) is renewed by running that grant again.
    ///
    /// - Throws: ``OAuth2Error``: the provider's `invalid_grant` when the
    ///   grant is gone (the stored token is then deleted and the delegate hears
    ///   "did lose"); `not_authenticated` without a token or a way to renew
    ///   it; `lock_timeout` when another process held the account's lock
    ///   too long; a 5xx or transport error, with the token kept.
    @discardableResult
    public func refreshAccessToken() async throws(OAuth2Error) -> AccessToken {
        try await loadIfNeeded()
        return try await refresh(failedToken: nil, force: true, automatic: false)
    }

    /// Refreshes through the provider's coordinator, then applies the outcome to this client.
    ///
    /// - Parameters:
    ///   - failedToken: the access token a resource server rejected, if that is why.
    ///   - force: refresh even when the stored token is still valid.
    ///   - automatic: the refresh serves a signed request, so a lost grant is
    ///     reported as `reauthorization_required`.
    func refresh(failedToken: Secret?, force: Bool, automatic: Bool) async throws(OAuth2Error) -> AccessToken {
        let seen = machine.withLock { machine in
            machine.refreshStarted()
            return machine.currentToken
        }
        let (result, leader) = await provider.refreshCoordinator.refresh(account: account) {
            try await self.runRefresh(seen: seen, failedToken: failedToken, force: force)
        }
        switch result {
        case .success(let outcome):
            if leader { provider.telemetry.refreshFinished(outcome: outcome.refreshed ? "refreshed" : "reused") }
            notify(machine.withLock { $0.refreshSucceeded(outcome.token, leader: leader, refreshed: outcome.refreshed) })
            if leader, let storeError = outcome.storeError {
                notify(.storeFailed(storeError))
            }
            if leader, let deferred = outcome.idTokenDeferred {
                notify(.idTokenDeferred(deferred))
            }
            return outcome.token
        case .failure(let failure):
            let failure =
                failure as? RefreshFailure
                ?? RefreshFailure(error: OAuth2Error(code: .transportError, message: "the refresh failed"), lost: false)
            if leader { provider.telemetry.refreshFinished(outcome: failure.error.code.rawValue) }
            notify(machine.withLock { $0.refreshFailed(failure.error, lost: failure.lost, leader: leader, held: failure.held) })
            if automatic && failure.lost && failure.error.code == .invalidGrant {
                throw OAuth2Error(
                    code: .reauthorizationRequired,
                    message:
                        "the provider no longer accepts this account's grant (invalid_grant); the stored token was deleted, sign in again",
                    errorDescription: failure.error.errorDescription,
                    errorURI: failure.error.errorURI,
                    httpStatus: failure.error.httpStatus
                )
            }
            throw failure.error
        }
    }

    /// The refresh itself, run once per account in this process however many
    /// callers wait, and under the store's account lock so that it runs once
    /// across processes too.
    private func runRefresh(seen: AccessToken?, failedToken: Secret?, force: Bool) async throws(RefreshFailure)
        -> RefreshCoordinator.Outcome
    {
        do {
            return try await provider.vault.withAccountLock(account) {
                try await self.refreshHoldingLock(seen: seen, failedToken: failedToken, force: force)
            }
        } catch let failure as RefreshFailure {
            throw failure
        } catch let error as OAuth2Error {
            logger.debug("refresh could not take the account lock", metadata: ["oauth2.error": "\(error.code)"])
            throw RefreshFailure(error: error, lost: false)
        } catch {
            throw RefreshFailure(error: OAuth2Error(code: .storeError, message: "the account lock failed: \(type(of: error))"), lost: false)
        }
    }

    /// Reads the store, decides, refreshes or renews, saves; the account lock is held.
    ///
    /// Reads the store first: another client or process of the account may
    /// have stored a newer token while this one waited for the lock, which is
    /// then used instead of spending the refresh token again (a rotating one
    /// would fail, and with reuse protection revoke the grant). A token other
    /// than the one this caller saw (`seen`) is used as long as it has not
    /// expired, even inside the expiry skew: with tokens that live less than
    /// the skew, every waiter would otherwise refresh again in turn.
    private func refreshHoldingLock(seen: AccessToken?, failedToken: Secret?, force: Bool) async throws(RefreshFailure)
        -> RefreshCoordinator.Outcome
    {
        let now = provider.clock.now()
        let stored: AccessToken?
        do throws(OAuth2Error) {
            stored = try await provider.vault.load(account: account)
        } catch {
            throw RefreshFailure(error: error, lost: false)
        }
        guard let stored else {
            if seen != nil {
                // The token this caller held was deleted while it waited:
                // another process found the grant gone.
                throw RefreshFailure(
                    error: OAuth2Error(
                        code: .reauthorizationRequired,
                        message:
                            "the account's token was deleted while this request waited for the refresh lock (another process found the grant revoked); sign in again"
                    ),
                    lost: true
                )
            }
            throw RefreshFailure(
                error: OAuth2Error(code: .notAuthenticated, message: "no token is stored for account \(account)"),
                lost: true
            )
        }
        if let unverified = stored.unverifiedIDToken, unverified.isRefused {
            // The grant named another user: it is not spent again.
            throw RefreshFailure(error: unverified.refusal, lost: false, held: stored)
        }
        let replacedMeanwhile = seen.map { stored.accessToken != $0.accessToken } ?? false
        if let failedToken {
            if stored.accessToken != failedToken && !stored.isExpired(at: now) {
                return .init(token: stored, refreshed: false)
            }
        } else if !force && replacedMeanwhile && !stored.isExpired(at: now) {
            return .init(token: stored, refreshed: false)
        } else if !force && !stored.isExpired(at: now, skewSeconds: provider.expirySkewSeconds) {
            return .init(token: stored, refreshed: false)
        }

        var token: AccessToken
        var idTokenDeferred: OAuth2Error?
        if let refreshToken = stored.refreshToken {
            let refusedDowngrade: OAuth2Error?
            do throws(OAuth2Error) {
                // A bound grant is refreshed with its own key, whatever the
                // configuration says: a public client's refresh token is bound to it.
                let answer = try await provider.requestTokenKeepingDowngrade(
                    .refreshToken(refreshToken, scopes: []),
                    requestedScopes: stored.scopes,
                    idToken: .refresh(previous: stored.idToken),
                    dpopKey: stored.dpopKey
                )
                token = answer.token
                refusedDowngrade = answer.refusedDowngrade
            } catch  where error.code == .invalidGrant {
                if let current = try await tokenStoredMeanwhile(replacing: stored) {
                    logger.debug("refresh refused, but another holder stored a new token meanwhile; using it")
                    return .init(token: current, refreshed: false)
                }
                guard let renewal = renewalGrant(for: stored) else {
                    logger.debug("refresh refused: invalid_grant; deleting the stored token")
                    try await deleteHoldingLock(unless: stored)
                    throw RefreshFailure(error: error, lost: true)
                }
                logger.debug("refresh refused: invalid_grant; running the token's grant again")
                token = try await renew(stored, with: renewal)
                // The refused refresh token is dead: it is not carried over.
                return await save(token, grant: stored.grant)
            } catch {
                throw RefreshFailure(error: error, lost: false)
            }
            if token.refreshToken == nil {
                token.refreshToken = refreshToken
            }
            if let refusedDowngrade {
                throw await keepDowngraded(token, stored: stored, refusal: refusedDowngrade)
            }
            if let unverified = token.unverifiedIDToken, !unverified.isRefused {
                idTokenDeferred = OAuth2Error(
                    code: unverified.reason,
                    message:
                        "the refreshed ID token could not be verified now (\(unverified.reason)); the new tokens are used, the sign-in's verified claims kept, and it is verified again later"
                )
            }
            // A refresh without a new verified ID token keeps the sign-in's
            // (OpenID Connect Core §12.2), and one still to be verified.
            if token.idToken == nil, token.extraFields["id_token"] == nil {
                token.idToken = stored.idToken
                token.extraFields["id_token"] = stored.extraFields["id_token"]
                token.unverifiedIDToken = token.unverifiedIDToken ?? stored.unverifiedIDToken
            }
            if let unverified = token.unverifiedIDToken, unverified.isRefused {
                // The provider rotated the refresh token: keep it (a logout
                // revokes it), but never let the new tokens act as the signed-in user.
                let outcome = await save(token, grant: stored.grant)
                logger.warning(
                    "the refreshed ID token was refused; the account's tokens are held, not used",
                    metadata: ["oauth2.error": "\(unverified.reason)"])
                throw RefreshFailure(error: unverified.refusal, lost: false, held: outcome.token)
            }
        } else if let renewal = renewalGrant(for: stored) {
            token = try await renew(stored, with: renewal)
        } else if failedToken != nil {
            try await deleteHoldingLock(unless: stored)
            throw RefreshFailure(
                error: OAuth2Error(code: .invalidToken, message: "the resource server rejected the token and there is no refresh token"),
                lost: true
            )
        } else {
            // Nothing was rejected: the token stays usable until it expires.
            throw RefreshFailure(
                error: OAuth2Error(code: .notAuthenticated, message: "the token cannot be refreshed: the provider issued no refresh token"),
                lost: false
            )
        }
        var outcome = await save(token, grant: stored.grant)
        outcome.idTokenDeferred = idTokenDeferred
        return outcome
    }

    /// Keeps the tokens of a refresh whose bearer answer to a DPoP request
    /// was refused: the refresh token the provider may have rotated is the
    /// grant's only one now, so it is saved, still bound to the grant's key;
    /// the bearer access token is saved as already due, so that it is never
    /// presented (every use refreshes first, with a proof, and a provider
    /// that binds the token then is used again).
    ///
    /// - Returns: the failure to throw, holding the saved token.
    private func keepDowngraded(_ token: AccessToken, stored: AccessToken, refusal: OAuth2Error) async -> RefreshFailure {
        var held = token
        held.dpopKey = stored.dpopKey
        held.expiresAt = held.issuedAt ?? provider.clock.now()
        if held.idToken == nil, held.extraFields["id_token"] == nil {
            held.idToken = stored.idToken
            held.extraFields["id_token"] = stored.extraFields["id_token"]
        }
        let outcome = await save(held, grant: stored.grant)
        logger.warning(
            "the provider answered a DPoP refresh with a bearer token; the new refresh token is kept, the access token not used",
            metadata: ["oauth2.error": "\(refusal.code)"])
        return RefreshFailure(error: refusal, lost: false, held: outcome.token)
    }

    /// Saves a refreshed or renewed token; it keeps the record of the grant
    /// that first obtained the account's token. A store failure keeps it in
    /// memory (``AccountVault/persist(_:account:)``) and is reported.
    private func save(_ token: AccessToken, grant: TokenGrant?) async -> RefreshCoordinator.Outcome {
        var token = token
        token.grant = grant ?? token.grant
        let (saved, storeError) = await provider.vault.persist(token, account: account)
        logger.debug("token refreshed")
        return .init(token: saved, refreshed: true, storeError: storeError)
    }

    /// A grant that obtains a new token for `token` without the user, if its
    /// grant can run again (client credentials, the configuration's assertion grant).
    private func renewalGrant(for token: AccessToken) -> TokenGrant? {
        guard let grant = token.grant, provider.renewableGrantTypes.contains(grant.type) else { return nil }
        return grant
    }

    /// Runs `grant` again for a new token; the account lock is held.
    ///
    /// `invalid_grant` or `invalid_client` here mean the client itself is no
    /// longer allowed: the token is deleted (lost).
    private func renew(_ stored: AccessToken, with grant: TokenGrant) async throws(RefreshFailure) -> AccessToken {
        logger.debug("renewing the token by its grant", metadata: ["oauth2.grant": "\(grant.type)"])
        do throws(OAuth2Error) {
            // The grant's key stays the grant's when it runs again.
            let key: DPoPKey? = if let key = stored.dpopKey { key } else { try configuration.newDPoPKey() }
            var token = try await provider.requestToken(try await renewalRequest(for: grant), requestedScopes: grant.scopes, dpopKey: key)
            token.grant = grant
            return token
        } catch  where error.code == .invalidGrant || error.code == .invalidClient || error.code == .unauthorizedClient {
            try await deleteHoldingLock(unless: stored)
            throw RefreshFailure(error: error, lost: true)
        } catch {
            throw RefreshFailure(error: error, lost: false)
        }
    }

    /// The token request that renews a token obtained by `grant`.
    private func renewalRequest(for grant: TokenGrant) async throws(OAuth2Error) -> Grant {
        if grant.type == TokenGrant.clientCredentialsType {
            return .clientCredentials(scopes: grant.scopes)
        }
        guard let assertionGrant = configuration.assertionGrant, assertionGrant.type == grant.type else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration cannot run the \(grant.type) grant again")
        }
        return .assertion(type: grant.type, assertion: try await provider.makeAssertion(assertionGrant), scopes: grant.scopes)
    }

    /// After `invalid_grant`: a token someone else stored while this refresh
    /// ran (a process that does not take the lock, a sign-in), if the store
    /// now holds one other than `spent`.
    private func tokenStoredMeanwhile(replacing spent: AccessToken) async throws(RefreshFailure) -> AccessToken? {
        let current: AccessToken?
        do throws(OAuth2Error) {
            current = try await provider.vault.load(account: account)
        } catch {
            throw RefreshFailure(error: error, lost: false)
        }
        guard let current, current.accessToken != spent.accessToken || current.refreshToken != spent.refreshToken else {
            return nil
        }
        return current
    }

    /// Deletes the stored token unless another holder replaced it; the account lock is held.
    private func deleteHoldingLock(unless token: AccessToken) async throws(RefreshFailure) {
        do throws(OAuth2Error) {
            let current = try await provider.vault.load(account: account)
            guard current == nil || current?.accessToken == token.accessToken else { return }
            try await provider.vault.delete(account: account)
        } catch {
            throw RefreshFailure(error: error, lost: false)
        }
    }

    /// Deletes the stored token under the account lock, unless another client
    /// or process replaced it meanwhile.
    func deleteIfUnchanged(_ token: AccessToken) async throws(OAuth2Error) {
        do {
            try await provider.vault.withAccountLock(account) { () async throws in
                let current = try await self.provider.vault.load(account: self.account)
                guard current == nil || current?.accessToken == token.accessToken else { return }
                try await self.provider.vault.delete(account: self.account)
            }
        } catch let error as OAuth2Error {
            throw error
        } catch {
            throw OAuth2Error(code: .storeError, message: "could not delete the token: \(type(of: error))")
        }
    }
}
