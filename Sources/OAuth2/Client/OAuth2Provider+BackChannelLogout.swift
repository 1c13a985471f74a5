#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Provider {
    /// Verifies a back-channel logout token (OpenID Connect Back-Channel
    /// Logout 1.0 §2.6) that the provider POSTed to the app's
    /// `backchannel_logout_uri`, and returns what it says ended.
    ///
    /// The provider verifies it, not an ``OAuth2Client``: the request names
    /// no account, only the provider's session (`sid`) or user (`sub`).
    /// The token is verified as an ID token is, with the same key set,
    /// allowed algorithms (``OpenIDSettings/signingAlgorithms``: set them to
    /// the `id_token_signed_response_alg` the client registered, RS256 by
    /// default, rather than all that discovery lists), issuer rule, client id
    /// and clock leeway; then §2.4's claims: `jti`, the back-channel logout
    /// `events` member, `sub` or `sid`, no `nonce`, and a `typ` header, when
    /// present, of a logout token. A `jti` accepted before from the same
    /// issuer is refused until its token expires: this process remembers it,
    /// another instance of the app does not.
    ///
    /// Then end the app's sessions that ``LogoutToken/ends(_:)`` says it
    /// ends (with a `sid`, the sessions of that sign-in; with only a `sub`,
    /// all of that user's at the issuer) and answer ``BackChannelLogout/ok``.
    ///
    /// - Throws: ``OAuth2Error``: `invalid_configuration` when the
    ///   configuration has no OpenID Connect settings or issuer; the JWS's
    ///   `invalid_jwt`, `unsupported_algorithm`, `invalid_signature`,
    ///   `unknown_signing_key` and the key set's fetch errors; `issuer_mismatch`,
    ///   `audience_mismatch`; `invalid_logout_token`; `logout_token_replayed`.
    ///   Whatever it throws, answer ``BackChannelLogout/failure(_:)`` (400).
    public func verifyLogoutToken(_ raw: String) async throws(OAuth2Error) -> LogoutToken {
        guard let idTokenVerifier, let keySet else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "back-channel logout needs OpenID Connect settings and an issuer in the configuration")
        }
        let verifier = LogoutTokenVerifier(idTokens: idTokenVerifier, replays: logoutTokenReplays)
        return try await verifier.verify(raw, keys: keySet, now: clock.now())
    }

    /// Verifies a back-channel logout request: the body the provider POSTed
    /// (`application/x-www-form-urlencoded`, §2.5), read up to
    /// ``BackChannelLogout/maxBodySize`` bytes; its one `logout_token` is
    /// verified by ``verifyLogoutToken(_:)``, other parameters ignored.
    ///
    /// - Throws: as ``verifyLogoutToken(_:)``, and `response_too_large` or
    ///   `invalid_logout_token` for a body without exactly one `logout_token`.
    public func verifyLogoutRequest(body: Data) async throws(OAuth2Error) -> LogoutToken {
        try await verifyLogoutToken(try BackChannelLogout.logoutToken(fromForm: body))
    }
}
