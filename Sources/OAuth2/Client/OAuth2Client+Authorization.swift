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
    /// The client remembers the returned value for ``authenticate(_:)`` with
    /// ``OAuth2Grant/authorizationCode(redirect:pending:)-(String,_)``; a
    /// server may also keep it (it is `Codable`) in the user's session and
    /// pass it back, on this instance or another.
    ///
    /// - Parameters:
    ///   - redirectURI: where the provider sends the user back; registered with the provider.
    ///   - scopes: the scopes to ask for; the configuration's defaults when `nil`.
    ///   - additionalParameters: more query parameters (`prompt`, `login_hint`, …); none may
    ///     replace one the flow sets.
    /// A pushed (RFC 9126) or signed (RFC 9101) request is made as
    /// ``OAuth2Provider/authorizationURL(redirectURI:scopes:additionalParameters:)`` says.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when there is no
    ///   authorization endpoint or a parameter would override the flow's own;
    ///   a push's errors (the provider's, `invalid_pushed_authorization_response`, the transport's).
    public func authorizationURL(
        redirectURI: URL,
        scopes: [String]? = nil,
        additionalParameters: [(String, String)] = []
    ) async throws(OAuth2Error) -> PendingAuthorization {
        let pending = try await provider.authorizationURL(
            redirectURI: redirectURI, scopes: scopes, additionalParameters: additionalParameters)
        machine.withLock { $0.authorizationStarted(pending) }
        return pending
    }
}
