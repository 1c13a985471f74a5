#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Client {
    /// The verified claims of the signed-in user's ID token, when the
    /// account's token came with one (OpenID Connect); reads the store.
    ///
    /// - Throws: ``OAuth2Error`` `store_error` or `provider_mismatch` when the token cannot be read.
    public func idToken() async throws(OAuth2Error) -> IDToken? {
        try await loadIfNeeded()
        return currentToken?.idToken
    }

    /// Asks the OpenID Connect userinfo endpoint about the signed-in user,
    /// with the account's token (refreshed first if it is about to expire).
    ///
    /// The answer's `sub` must be the ID token's (OpenID Connect Core §5.3.2):
    /// an answer about anyone else is refused.
    ///
    /// - Throws: ``OAuth2Error``: `invalid_configuration` without a userinfo
    ///   endpoint; `subject_mismatch`; the errors of ``send(_:)`` and of a bad
    ///   answer (`http_error`, `invalid_token_response`, …).
    public func userInfo() async throws(OAuth2Error) -> UserInfo {
        guard let endpoint = configuration.openID?.userinfoEndpoint else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no userinfo endpoint (OpenID Connect)")
        }
        let request = HTTPTransportRequest(
            method: .get,
            url: endpoint,
            headers: [.accept: "application/json"],
            timeout: configuration.requestTimeout,
            maxResponseSize: configuration.maxResponseSize
        )
        let response = try await send(request)
        let info = try UserInfo.parse(response, maxBodySize: configuration.maxResponseSize, now: provider.clock.now())
        if let signedIn = try await idToken(), signedIn.subject != info.subject {
            throw OAuth2Error(code: .subjectMismatch, message: "the userinfo answer is about another user (sub) than the ID token's")
        }
        return info
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
