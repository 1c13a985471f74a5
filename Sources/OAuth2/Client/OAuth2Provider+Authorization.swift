import Logging
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Provider {
    /// Starts the user-agent (authorization code) flow: the URL to send the
    /// user to, with `response_type=code`, a fresh `state` (256 bits) and a
    /// PKCE S256 challenge; with ``OAuth2Configuration/dpop``, a new key for
    /// the grant, named by `dpop_jkt` and kept in the returned value.
    ///
    /// Keep the returned value (it is `Codable`) in the user's session and
    /// pass it with the redirect to ``token(for:)`` (``OAuth2Grant/authorizationCode(redirect:pending:)-(String,_)``)
    /// on the callback, on this instance or another.
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
        let pending = try AuthorizationRequestBuilder.make(
            configuration: configuration,
            redirectURI: redirectURI,
            scopes: scopes ?? configuration.defaultScopes,
            additionalParameters: additionalParameters,
            now: clock.now(),
            dpopKey: try configuration.newDPoPKey()
        )
        logger.debug("authorization started", metadata: ["oauth2.redirect_uri": "\(redirectURI.redactingQuery)"])
        return pending
    }
}
