/// Why a refresh produced no token, and whether the grant is gone (`lost`:
/// the stored token was deleted) or merely unreachable (kept).
struct RefreshFailure: Error {
    var error: OAuth2Error
    var lost: Bool
}

extension OAuth2Client {
    /// Refreshes the access token now, whatever its expiry.
    ///
    /// Normally unnecessary: ``send(_:)`` refreshes on its own. Single-flight
    /// per account: concurrent calls share one token request. A new refresh
    /// token replaces the old one; when the provider sends none, the old one is kept.
    ///
    /// - Throws: ``OAuth2Error``: the provider's `invalid_grant` when the
    ///   grant is gone (the stored token is then deleted and the delegate hears
    ///   "did lose"); `not_authenticated` without a token or refresh token; a
    ///   5xx or transport error, with the token kept.
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
        machine.withLock { $0.refreshStarted() }
        let (result, leader) = await provider.refreshCoordinator.refresh(account: account) {
            try await self.runRefresh(failedToken: failedToken, force: force)
        }
        switch result {
        case .success(let outcome):
            notify(machine.withLock { $0.refreshSucceeded(outcome.token, leader: leader, refreshed: outcome.refreshed) })
            return outcome.token
        case .failure(let failure):
            let failure = failure as? RefreshFailure
                ?? RefreshFailure(error: OAuth2Error(code: .transportError, message: "the refresh failed"), lost: false)
            notify(machine.withLock { $0.refreshFailed(failure.error, lost: failure.lost, leader: leader) })
            if automatic && failure.lost && failure.error.code == .invalidGrant {
                throw OAuth2Error(
                    code: .reauthorizationRequired,
                    message: "the provider no longer accepts this account's grant (invalid_grant); the stored token was deleted, sign in again",
                    errorDescription: failure.error.errorDescription,
                    errorURI: failure.error.errorURI,
                    httpStatus: failure.error.httpStatus
                )
            }
            throw failure.error
        }
    }

    /// The refresh itself, run once per account however many callers wait.
    ///
    /// Reads the store first: another client of the account (or an earlier
    /// refresh) may have stored a newer token, which is then used instead of
    /// spending the refresh token again (a rotating one would fail).
    private func runRefresh(failedToken: Secret?, force: Bool) async throws(RefreshFailure) -> RefreshCoordinator.Outcome {
        let now = provider.clock.now()
        let stored: AccessToken?
        do throws(OAuth2Error) {
            stored = try await provider.load(account: account)
        } catch {
            throw RefreshFailure(error: error, lost: false)
        }
        guard let stored else {
            throw RefreshFailure(
                error: OAuth2Error(code: .notAuthenticated, message: "no token is stored for account \(account)"),
                lost: true
            )
        }
        if let failedToken {
            if stored.accessToken != failedToken && !stored.isExpired(at: now) {
                return .init(token: stored, refreshed: false)
            }
        } else if !force && !stored.isExpired(at: now, skew: configuration.expirySkew) {
            return .init(token: stored, refreshed: false)
        }
        guard let refreshToken = stored.refreshToken else {
            guard failedToken != nil else {
                // Nothing was rejected: the token stays usable until it expires.
                throw RefreshFailure(
                    error: OAuth2Error(code: .notAuthenticated, message: "the token cannot be refreshed: the provider issued no refresh token"),
                    lost: false
                )
            }
            try? await deleteIfUnchanged(stored)
            throw RefreshFailure(
                error: OAuth2Error(code: .invalidToken, message: "the resource server rejected the token and there is no refresh token"),
                lost: true
            )
        }
        var token: AccessToken
        do throws(OAuth2Error) {
            token = try await requestToken(.refreshToken(refreshToken, scopes: []), requestedScopes: stored.scopes)
        } catch where error.code == .invalidGrant {
            logger.debug("refresh refused: invalid_grant; deleting the stored token")
            do throws(OAuth2Error) {
                try await deleteIfUnchanged(stored)
            } catch {
                throw RefreshFailure(error: error, lost: false)
            }
            throw RefreshFailure(error: error, lost: true)
        } catch {
            throw RefreshFailure(error: error, lost: false)
        }
        if token.refreshToken == nil {
            token.refreshToken = refreshToken
        }
        do throws(OAuth2Error) {
            try await provider.save(token, account: account)
        } catch {
            throw RefreshFailure(error: error, lost: false)
        }
        logger.debug("token refreshed")
        return .init(token: token, refreshed: true)
    }

    /// Deletes the stored token unless another client replaced it meanwhile.
    func deleteIfUnchanged(_ token: AccessToken) async throws(OAuth2Error) {
        let current = try await provider.load(account: account)
        guard current == nil || current?.accessToken == token.accessToken else { return }
        try await provider.delete(account: account)
    }
}
