#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Client {
    /// Starts the user-agent (authorization code) flow: the URL to send the
    /// user to, with `response_type=code`, a fresh `state` (256 bits) and a
    /// PKCE S256 challenge.
    ///
    /// The client remembers the returned value for ``openRedirectURL(_:pending:)-(String,_)``;
    /// a server may also keep it (it is `Codable`) in the user's session and
    /// pass it back, on this instance or another.
    ///
    /// - Parameters:
    ///   - redirectURI: where the provider sends the user back; registered with the provider.
    ///   - scopes: the scopes to ask for; the configuration's defaults when `nil`.
    ///   - additionalParameters: more query parameters (`prompt`, `login_hint`, …); none may
    ///     replace one the flow sets.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when there is no
    ///   authorization endpoint or a parameter would override the flow's own.
    public func authorizationURL(
        redirectURI: URL,
        scopes: [String]? = nil,
        additionalParameters: [(String, String)] = []
    ) throws(OAuth2Error) -> PendingAuthorization {
        let pending = try provider.authorizationURL(redirectURI: redirectURI, scopes: scopes, additionalParameters: additionalParameters)
        machine.withLock { $0.authorizationStarted(pending) }
        return pending
    }

    /// Finishes the user-agent flow: validates the redirect, exchanges the code, stores the token.
    ///
    /// The redirect is checked in this order: its scheme, host, port and path
    /// equal the redirect URI that was sent; `state` is present and equal;
    /// then `error` or `code`; a repeated parameter is an error; `iss` is
    /// compared (RFC 9207). A state is accepted once, across all the clients of the provider.
    ///
    /// - Parameters:
    ///   - redirect: the URL the provider sent the user to, as received or pasted.
    ///   - pending: the value ``authorizationURL(redirectURI:scopes:additionalParameters:)``
    ///     returned, when the caller kept it; by default the one this client remembers.
    /// - Returns: the token, already stored.
    /// - Throws: ``OAuth2Error``: the redirect's codes (`redirect_uri_mismatch`,
    ///   `state_mismatch`, …), the provider's error (`access_denied`, `invalid_grant`, …).
    @discardableResult
    public func openRedirectURL(_ redirect: String, pending: PendingAuthorization? = nil) async throws(OAuth2Error) -> AccessToken {
        guard let pending = pending ?? machine.withLock({ $0.pendingAuthorization }) else {
            let error = OAuth2Error(
                code: .stateMismatch, message: "no authorization is pending (the redirect was already used, or none was started)")
            notify(machine.withLock { $0.redirectRejected(error) })
            throw error
        }
        return try await obtain { () async throws(OAuth2Error) -> AccessToken in
            try await self.provider.exchange(redirect, pending: pending)
        }
    }

    /// Finishes the user-agent flow from a redirect URL.
    @discardableResult
    public func openRedirectURL(_ redirect: URL, pending: PendingAuthorization? = nil) async throws(OAuth2Error) -> AccessToken {
        try await openRedirectURL(redirect.absoluteString, pending: pending)
    }
}
