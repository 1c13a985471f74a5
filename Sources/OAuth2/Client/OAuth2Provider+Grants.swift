import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The grants, run before anyone knows whose token it is; ``OAuth2Client/authenticate(_:)``
/// is built on them.
extension OAuth2Provider {
    /// Runs a grant and returns its token, stamped with this provider's
    /// ``TokenBinding`` and the grant that obtained it; stores nothing.
    ///
    /// With ``OAuth2Configuration/dpop`` set, the grant's token requests carry
    /// proofs of a new key (for the authorization code, the key its
    /// ``PendingAuthorization`` holds), and its token is bound to that key
    /// (``AccessToken/dpopKey``).
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
    ///   (`invalid_grant`, …) or the transport's; with DPoP, `dpop_nonce_loop`
    ///   and `dpop_downgraded`.
    public func token(for grant: OAuth2Grant) async throws(OAuth2Error) -> AccessToken {
        switch grant.kind {
        case .authorizationCode(let callback, let pending):
            guard let pending else {
                throw OAuth2Error(
                    code: .stateMismatch,
                    message: "no authorization is pending: pass the PendingAuthorization that authorizationURL returned"
                )
            }
            return try await exchange(callback, pending: pending)
        case .password(let username, let password, let scopes):
            guard configuration.allowsPasswordGrant else {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "the password grant is off; set allowsPasswordGrant in the configuration to use it"
                )
            }
            let scopes = scopes ?? configuration.defaultScopes
            return try await requestToken(
                .password(username: username, password: password, scopes: scopes), requestedScopes: scopes,
                dpopKey: try configuration.newDPoPKey())
        case .clientCredentials(let scopes):
            guard configuration.clientAuthentication != .none else {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "the client credentials grant needs a confidential client: the configuration has no client secret"
                )
            }
            let scopes = scopes ?? configuration.defaultScopes
            return try await requestToken(
                .clientCredentials(scopes: scopes), requestedScopes: scopes, dpopKey: try configuration.newDPoPKey())
        case .configuredAssertion(let scopes):
            guard let assertionGrant = configuration.assertionGrant else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no assertion grant (assertionGrant)")
            }
            let scopes = scopes ?? configuration.defaultScopes
            let assertion = try await makeAssertion(assertionGrant)
            return try await requestToken(
                .assertion(type: assertionGrant.type, assertion: assertion, scopes: scopes), requestedScopes: scopes,
                dpopKey: try configuration.newDPoPKey())
        case .assertion(let type, let assertion, let scopes):
            let scopes = scopes ?? configuration.defaultScopes
            return try await requestToken(
                .assertion(type: type, assertion: assertion, scopes: scopes), requestedScopes: scopes,
                dpopKey: try configuration.newDPoPKey())
        case .deviceCode(let authorization, let scopes):
            return try await pollDeviceToken(authorization, scopes: scopes ?? configuration.defaultScopes)
        }
    }

    /// Validates the redirect or posted response (``OAuth2Grant/authorizationCode(redirect:pending:)-(String,_)``
    /// says in which order) and exchanges its code.
    private func exchange(_ callback: OAuth2Grant.AuthorizationCallback, pending: PendingAuthorization) async throws(OAuth2Error)
        -> AccessToken
    {
        let code: Secret
        do throws(OAuth2Error) {
            code = try callback.code(for: pending, issuerRule: configuration.issuerRule)
        } catch {
            logger.debug("redirect refused", metadata: ["oauth2.error": "\(error.code)"])
            throw error
        }
        guard usedStates.consume(pending.state) else {
            throw OAuth2Error(code: .stateMismatch, message: "this authorization's state was already used")
        }
        let grant = Grant.authorizationCode(code: code, redirectURI: pending.redirectURI, codeVerifier: pending.codeVerifier)
        // The code is bound to the key its authorization request named (dpop_jkt).
        let key: DPoPKey? = if let key = pending.dpopKey { key } else { try configuration.newDPoPKey() }
        return try await requestToken(grant, requestedScopes: pending.scopes, idToken: .signIn(nonce: pending.nonce), dpopKey: key)
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
