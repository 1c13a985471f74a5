import Logging
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Grants that run before anyone knows whose token it is: each returns the
/// token, stamped with this provider's ``TokenBinding`` and the grant that
/// obtained it, and stores nothing. ``OAuth2Client/adopt(_:)`` then makes it
/// an account's token (a server learns the user from the token, not before).
/// The account-bound calls of ``OAuth2Client`` are built on these.
extension OAuth2Provider {
    /// Runs a grant and returns its token, stamped with this provider's
    /// ``TokenBinding`` and the grant that obtained it; stores nothing.
    ///
    /// ``OAuth2Client/adopt(_:)`` then makes it an account's token: a server
    /// learns the user from the token, not before. ``OAuth2Client/authenticate(_:)``
    /// does both for a known account.
    ///
    /// - Returns: the token, not stored.
    /// - Throws: ``OAuth2Error``: `invalid_configuration` when the
    ///   configuration does not allow the grant (the password grant without
    ///   its opt-in, client credentials for a public client, the configured
    ///   assertion grant without one, or its assertion could not be made);
    ///   for the authorization code, the redirect's codes
    ///   (`redirect_uri_mismatch`, `state_mismatch`, …); for the device code,
    ///   `access_denied`, `expired_token`, `cancelled`; the provider's error
    ///   (`invalid_grant`, …) or the transport's.
    public func token(for grant: OAuth2Grant) async throws(OAuth2Error) -> AccessToken {
        switch grant.kind {
        case .authorizationCode(let redirect, let pending):
            guard let pending else {
                throw OAuth2Error(
                    code: .stateMismatch,
                    message: "no authorization is pending: pass the PendingAuthorization that authorizationURL returned"
                )
            }
            return try await exchange(redirect, pending: pending)
        case .password(let username, let password, let scopes):
            guard configuration.allowsPasswordGrant else {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "the password grant is off; set allowsPasswordGrant in the configuration to use it"
                )
            }
            let scopes = scopes ?? configuration.defaultScopes
            return try await requestToken(.password(username: username, password: password, scopes: scopes), requestedScopes: scopes)
        case .clientCredentials(let scopes):
            guard configuration.clientAuthentication != .none else {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "the client credentials grant needs a confidential client: the configuration has no client secret"
                )
            }
            let scopes = scopes ?? configuration.defaultScopes
            return try await requestToken(.clientCredentials(scopes: scopes), requestedScopes: scopes)
        case .configuredAssertion(let scopes):
            guard let assertionGrant = configuration.assertionGrant else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no assertion grant (assertionGrant)")
            }
            let scopes = scopes ?? configuration.defaultScopes
            let assertion = try await makeAssertion(assertionGrant)
            return try await requestToken(
                .assertion(type: assertionGrant.type, assertion: assertion, scopes: scopes), requestedScopes: scopes)
        case .assertion(let type, let assertion, let scopes):
            let scopes = scopes ?? configuration.defaultScopes
            return try await requestToken(.assertion(type: type, assertion: assertion, scopes: scopes), requestedScopes: scopes)
        case .deviceCode(let authorization, let scopes):
            return try await deviceToken(for: authorization, scopes: scopes)
        }
    }

    /// Finishes the user-agent flow: validates the redirect and exchanges the code.
    ///
    /// The redirect is checked in this order: its scheme, host, port and path
    /// equal the redirect URI that was sent; `state` is present and equal;
    /// then `error` or `code`; a repeated parameter is an error; `iss` is
    /// compared (RFC 9207). A state is accepted once across the provider.
    ///
    /// - Parameters:
    ///   - redirect: the URL the provider sent the user to, as received or pasted.
    ///   - pending: what ``authorizationURL(redirectURI:scopes:additionalParameters:)`` returned.
    /// - Returns: the token, not stored: adopt it (``OAuth2Client/adopt(_:)``).
    /// - Throws: ``OAuth2Error``: the redirect's codes (`redirect_uri_mismatch`,
    ///   `state_mismatch`, …), the provider's error (`access_denied`, `invalid_grant`, …).
    public func exchange(_ redirect: String, pending: PendingAuthorization) async throws(OAuth2Error) -> AccessToken {
        let code: Secret
        do throws(OAuth2Error) {
            code = try RedirectValidator.validate(redirect, pending: pending)
        } catch {
            logger.debug("redirect refused", metadata: ["oauth2.error": "\(error.code)"])
            throw error
        }
        guard usedStates.consume(pending.state) else {
            throw OAuth2Error(code: .stateMismatch, message: "this authorization's state was already used")
        }
        let grant = Grant.authorizationCode(code: code, redirectURI: pending.redirectURI, codeVerifier: pending.codeVerifier)
        return try await requestToken(grant, requestedScopes: pending.scopes, idToken: .signIn(nonce: pending.nonce))
    }

    /// Finishes the user-agent flow from a redirect URL; see ``exchange(_:pending:)-(String,_)``.
    public func exchange(_ redirect: URL, pending: PendingAuthorization) async throws(OAuth2Error) -> AccessToken {
        try await exchange(redirect.absoluteString, pending: pending)
    }

    /// The resource owner password grant (RFC 6749 §4.3).
    ///
    /// Only when the configuration opts in (`allowsPasswordGrant`): the grant
    /// is deprecated (RFC 9700 §2.4). The password is sent once and not kept.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` without the opt-in, or the provider's error.
    public func passwordToken(username: String, password: Secret, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard configuration.allowsPasswordGrant else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the password grant is off; set allowsPasswordGrant in the configuration to use it"
            )
        }
        let scopes = scopes ?? configuration.defaultScopes
        return try await requestToken(.password(username: username, password: password, scopes: scopes), requestedScopes: scopes)
    }

    /// The client credentials grant (RFC 6749 §4.4): a token for the client itself.
    ///
    /// An account's client renews such a token by itself when it expires.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` for a public client
    ///   (without a secret nothing proves it is the client), or the provider's error.
    public func clientCredentialsToken(scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard configuration.clientAuthentication != .none else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the client credentials grant needs a confidential client: the configuration has no client secret"
            )
        }
        let scopes = scopes ?? configuration.defaultScopes
        return try await requestToken(.clientCredentials(scopes: scopes), requestedScopes: scopes)
    }

    /// The configuration's assertion grant (``OAuth2Configuration/assertionGrant``)
    /// with a fresh assertion.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the configuration
    ///   has no assertion grant or it fails to make an assertion, or the provider's error.
    public func assertionToken(scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        guard let assertionGrant = configuration.assertionGrant else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no assertion grant (assertionGrant)")
        }
        let scopes = scopes ?? configuration.defaultScopes
        let assertion = try await makeAssertion(assertionGrant)
        return try await requestToken(.assertion(type: assertionGrant.type, assertion: assertion, scopes: scopes), requestedScopes: scopes)
    }

    /// An assertion grant (RFC 7521) with an assertion the caller made, such
    /// as a JWT bearer assertion (RFC 7523: `urn:ietf:params:oauth:grant-type:jwt-bearer`).
    ///
    /// - Parameters:
    ///   - assertionType: the `grant_type`, an absolute URI.
    ///   - assertion: the assertion, sent as `assertion`; never logged.
    ///   - scopes: the scopes to ask for; the configuration's defaults when `nil`.
    /// - Throws: ``OAuth2Error``, the provider's error among them.
    public func assertionToken(assertionType: String, assertion: Secret, scopes: [String]? = nil) async throws(OAuth2Error) -> AccessToken {
        let scopes = scopes ?? configuration.defaultScopes
        return try await requestToken(.assertion(type: assertionType, assertion: assertion, scopes: scopes), requestedScopes: scopes)
    }

    /// A fresh assertion from the configuration's grant; its failure is the app's, named without detail.
    func makeAssertion(_ grant: AssertionGrant) async throws(OAuth2Error) -> Secret {
        do {
            return try await grant.makeAssertion()
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "the assertion grant could not make an assertion: \(type(of: error))")
        }
    }
}
