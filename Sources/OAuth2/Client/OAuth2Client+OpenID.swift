#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Client {
    /// The verified claims of the signed-in user's ID token, when the
    /// account's token came with one (OpenID Connect); reads the store.
    ///
    /// When a refresh could not verify its ID token at the time
    /// (``UnverifiedIDToken``), verifies it now, under the account's lock,
    /// and stores the outcome: its claims when it verifies, the sign-in's
    /// verified claims while it still cannot be.
    ///
    /// - Throws: ``OAuth2Error`` `store_error` or `provider_mismatch` when the
    ///   token cannot be read; the refusal's code (`subject_mismatch`,
    ///   `invalid_signature`, …) when a refreshed ID token was refused, now or before.
    public func idToken() async throws(OAuth2Error) -> IDToken? {
        try await loadIfNeeded()
        guard let token = currentToken else { return nil }
        if let refusal = OAuth2StateMachine.refusal(of: token) { throw refusal }
        guard token.unverifiedIDToken != nil else { return token.idToken }
        return try await verifyDeferredIDToken()
    }

    /// Verifies the stored token's deferred ID token again and stores what
    /// came of it; the account's lock is taken, so that another process's
    /// refresh meanwhile is read, not overwritten.
    private func verifyDeferredIDToken() async throws(OAuth2Error) -> IDToken? {
        let token: AccessToken?
        do {
            token = try await provider.vault.withAccountLock(account) { () async throws -> AccessToken? in
                guard var stored = try await self.provider.vault.load(account: self.account) else { return nil }
                guard let unverified = stored.unverifiedIDToken, !unverified.isRefused,
                    let outcome = await self.provider.verifyDeferred(unverified, previous: stored.idToken)
                else { return stored }
                switch outcome {
                case .verified(let claims):
                    stored.idToken = claims
                    stored.extraFields["id_token"] = .string(unverified.rawValue.value)
                    stored.unverifiedIDToken = nil
                case .unverified(let error, refused: true):
                    stored.unverifiedIDToken = UnverifiedIDToken(
                        rawValue: unverified.rawValue, reason: error.code, isRefused: true, receivedAt: unverified.receivedAt)
                case .unverified(_, refused: false):
                    return stored
                }
                return await self.provider.vault.persist(stored, account: self.account).token
            }
        } catch let error as OAuth2Error {
            throw error
        } catch {
            throw OAuth2Error(code: .storeError, message: "could not verify the ID token again: \(type(of: error))")
        }
        guard let token else {
            // Deleted meanwhile by another client or process, which told its observers.
            _ = machine.withLock { $0.tokenLost(nil) }
            return nil
        }
        machine.withLock { _ = $0.refreshSucceeded(token, leader: false, refreshed: false) }
        if let refusal = OAuth2StateMachine.refusal(of: token) {
            notify(.failed(refusal))
            throw refusal
        }
        return token.idToken
    }

    /// Asks the OpenID Connect userinfo endpoint about the signed-in user,
    /// with the account's token (refreshed first if it is about to expire);
    /// `_claim_names` and `_claim_sources` reach the app as sent, unresolved
    /// (``userInfo(resolvingClaimSources:)`` resolves them).
    ///
    /// The answer's `sub` must be the ID token's (OpenID Connect Core §5.3.2):
    /// an answer about anyone else is refused. A signed answer
    /// (`application/jwt`) is verified against the provider's key set first,
    /// with its `iss` and `aud` when it has them; an encrypted one is refused. Like every provider document
    /// it is read from the endpoint itself: a redirect is not followed, since
    /// the answer of wherever it leads is not the provider's.
    ///
    /// - Throws: ``OAuth2Error``: `invalid_configuration` without a userinfo
    ///   endpoint; `subject_mismatch`; `unexpected_redirect`; the errors of
    ///   ``send(_:)`` and of a bad answer (`http_error`, `invalid_token_response`, …);
    ///   for a signed answer, `invalid_signature`, `unknown_signing_key`,
    ///   `unsupported_algorithm`, `issuer_mismatch`, `audience_mismatch`, ….
    public func userInfo() async throws(OAuth2Error) -> UserInfo {
        try await userInfo(resolvingClaimSources: false)
    }

    /// Asks the userinfo endpoint about the signed-in user as ``userInfo()``
    /// does and, when `resolvingClaimSources` is set, resolves the answer's
    /// aggregated and distributed claims (OpenID Connect Core §5.6.2).
    ///
    /// A source's claims join ``UserInfo/claims`` (``UserInfo/claimSources``
    /// says which came from where) only from a JWT that verifies with keys the
    /// app trusts for it: by default the provider's own key set, with the
    /// algorithms its ID tokens may use; besides, those of
    /// ``OpenIDSettings/claimsProviders`` (a JWT whose `iss` names one, or
    /// served at one's endpoint origin). A JWT naming another issuer, signed
    /// with `none` or HMAC, or not verifying is not trusted. A distributed
    /// source is fetched with its own `access_token` in the `Authorization`
    /// header only (never the account's token), from an `https` endpoint
    /// (`http` only from a loopback userinfo endpoint to a loopback host; an
    /// internal address only when the userinfo endpoint is on one, or at a
    /// claims provider's origin), without following redirects, within the
    /// request timeout and ``OpenIDSettings/maxIDTokenSize``; at most 16 sources,
    /// one after the other.
    ///
    /// A source that is not trusted, does not verify or cannot be fetched does
    /// not fail the call: it is in ``UserInfo/unresolvedClaimSources`` with
    /// its code, and its claims are not resolved.
    ///
    /// - Throws: the errors of ``userInfo()``.
    public func userInfo(resolvingClaimSources: Bool) async throws(OAuth2Error) -> UserInfo {
        guard let endpoint = configuration.openID?.userinfoEndpoint else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no userinfo endpoint (OpenID Connect)")
        }
        let request = HTTPTransportRequest(
            method: .get,
            url: endpoint,
            headers: [.accept: "application/json, application/jwt"],
            timeout: configuration.requestTimeout,
            redirects: .never,
            maxResponseSize: configuration.maxResponseSize
        )
        let response = try await send(request)
        let signed = provider.keySet.map { keys in
            SignedClaimsVerification(
                keys: keys,
                allowedAlgorithms: configuration.openID?.signingAlgorithms ?? [],
                issuer: configuration.issuer ?? "",
                clientID: configuration.clientID
            )
        }
        let info = try await UserInfo.parse(
            response, maxBodySize: configuration.maxResponseSize, now: provider.clock.now(), signed: signed)
        if let signedIn = try await idToken(), signedIn.subject != info.subject {
            throw OAuth2Error(code: .subjectMismatch, message: "the userinfo answer is about another user (sub) than the ID token's")
        }
        guard resolvingClaimSources, let resolver = claimSourceResolver(userinfoEndpoint: endpoint) else { return info }
        return await resolver.resolve(info)
    }

    /// The resolver of the configuration's trusted claims providers, or `nil`
    /// without OpenID Connect settings and an issuer (no key set to trust).
    private func claimSourceResolver(userinfoEndpoint: URL) -> ClaimSourceResolver? {
        guard let openID = configuration.openID, let issuer = configuration.issuer, let keys = provider.keySet else { return nil }
        let clientID = configuration.clientID
        return ClaimSourceResolver(
            openIDProvider: SignedClaimsVerification(
                keys: keys, allowedAlgorithms: openID.signingAlgorithms, issuer: issuer, clientID: clientID),
            claimsProviders: zip(openID.claimsProviders, provider.claimsProviderKeys).map { claimsProvider, keys in
                (
                    claimsProvider,
                    SignedClaimsVerification(
                        keys: keys, allowedAlgorithms: claimsProvider.signingAlgorithms, issuer: claimsProvider.issuer, clientID: clientID)
                )
            },
            transport: provider.transport,
            clock: provider.clock,
            clockLeeway: openID.clockLeeway,
            timeout: configuration.requestTimeout,
            maxSize: openID.maxIDTokenSize,
            userinfoEndpoint: userinfoEndpoint
        )
    }

    /// The OpenID Connect RP-initiated logout URL to send the user's browser
    /// to, ending the session at the provider: the end-session endpoint with
    /// the account's ID token as `id_token_hint`, `client_id`, and the given
    /// `post_logout_redirect_uri` (registered with the provider) and `state`.
    ///
    /// Ask for it before ``logout()``, which deletes the token and its ID
    /// token. Its `id_token_hint` is a credential of the user's sign-in: send
    /// the URL to that user's browser only, and do not log it.
    ///
    /// - Returns: the URL, or `nil` when the provider has no end-session endpoint.
    /// - Throws: ``OAuth2Error`` `store_error` when the token cannot be read;
    ///   `invalid_configuration` when a parameter is set twice.
    public func endSessionURL(
        postLogoutRedirectURI: URL? = nil,
        state: String? = nil,
        additionalParameters: [(String, String)] = []
    ) async throws(OAuth2Error) -> URL? {
        guard let endpoint = configuration.openID?.endSessionEndpoint else { return nil }
        try await loadIfNeeded()
        return try EndSessionRequest.url(
            endpoint: endpoint,
            idTokenHint: currentToken?.rawIDToken,
            clientID: configuration.clientID,
            postLogoutRedirectURI: postLogoutRedirectURI,
            state: state,
            additionalParameters: additionalParameters
        )
    }
}
