import Logging
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Signing the user in for a resource: through the redirect handler, or by
/// the app itself (``ProtectedResourceClient/authorizationURL(for:stepUp:redirectURI:)``
/// and ``ProtectedResourceClient/completeAuthorization(redirect:pending:)``).
extension ProtectedResourceClient {
    /// Starts an authorization for the resource `url` belongs to, for an app
    /// that sends its user through it itself (a server answering with a
    /// redirect): discovers the resource first when the client does not know it.
    ///
    /// - Parameters:
    ///   - url: a URL of the resource.
    ///   - stepUp: what a resource asked for (``OAuth2Error/stepUp`` of the
    ///     error that said so); `nil` for a first sign-in.
    ///   - redirectURI: where the server sends the user back; the redirect
    ///     handler's when `nil`.
    /// - Returns: the authorization to send the user to; keep it (it holds
    ///   the PKCE verifier) for ``completeAuthorization(redirect:pending:)``.
    /// - Throws: discovery's and identification's errors; `invalid_configuration`
    ///   without a redirect URI.
    public func authorizationURL(for url: URL, stepUp: StepUpRequest? = nil, redirectURI: URL? = nil) async throws(OAuth2Error)
        -> PendingAuthorization
    {
        let session: ResourceSession
        if let known = try await knownSession(for: url) {
            session = known
        } else {
            session = try await discover(for: url, challenge: nil)
        }
        guard let redirectURI = redirectURI ?? redirectHandler?.redirectURI else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "an authorization needs a redirect URI: pass one, or give the client a redirect handler")
        }
        return try await start(session, asking: stepUp ?? session.initialRequest, redirectURI: redirectURI)
    }

    /// Starts an authorization asking for `asked`: its scopes (the first
    /// sign-in's when it names none), and RFC 9470's `acr_values` and `max_age`.
    func start(_ session: ResourceSession, asking asked: StepUpRequest, redirectURI: URL) async throws(OAuth2Error) -> PendingAuthorization
    {
        var parameters: [(String, String)] = []
        if !asked.acrValues.isEmpty { parameters.append(("acr_values", asked.acrValues.joined(separator: " "))) }
        if let maxAge = asked.maxAge { parameters.append(("max_age", String(maxAge.components.seconds))) }
        let scopes = asked.scopes.isEmpty ? session.initialRequest.scopes : asked.scopes
        let pending = try await session.provider.authorizationURL(
            redirectURI: redirectURI, scopes: scopes, additionalParameters: parameters)
        pendingResources.withLock { $0[pending.state] = session.record.metadata.resource }
        return pending
    }

    /// Sends the user through the redirect handler and keeps the token.
    func authorize(_ session: ResourceSession, asking asked: StepUpRequest) async throws(OAuth2Error) {
        guard let handler = redirectHandler else {
            var error = OAuth2Error(
                code: .authorizationRequired, message: "the resource needs an authorization and the client has no redirect handler")
            error.stepUp = asked
            throw error
        }
        let pending = try await start(session, asking: asked, redirectURI: handler.redirectURI)
        let redirect: URL
        do throws(OAuth2Error) {
            redirect = try await handler.redirect(for: pending)
        } catch {
            pendingResources.withLock { _ = $0.removeValue(forKey: pending.state) }
            throw error
        }
        pendingResources.withLock { _ = $0.removeValue(forKey: pending.state) }
        try await finish(session, redirect: redirect, pending: pending)
    }

    /// Exchanges the redirect's code, checks the token's subject, and makes
    /// the token the resource's (stored under the session's account key).
    @discardableResult
    func finish(_ session: ResourceSession, redirect: URL, pending: PendingAuthorization) async throws(OAuth2Error) -> AccessToken {
        let token = try await session.provider.token(for: .authorizationCode(redirect: redirect, pending: pending))
        if let expected = options.expectedSubject {
            try await requireSubject(expected, of: token, session: session)
        }
        try await session.client.adopt(token)
        return session.client.currentToken ?? token
    }

    /// The AT Protocol's rule: the token response's `sub` (or its verified
    /// ID token's) must be the account the app expected.
    ///
    /// A token for another account is not kept for use: it was issued, so it
    /// is not silently dropped either; it is revoked at the provider when the
    /// provider has a revocation endpoint (best effort), so that no grant the
    /// app did not want stays alive, and the error says so.
    func requireSubject(_ expected: String, of token: AccessToken, session: ResourceSession) async throws(OAuth2Error) {
        let subject = token.extraFields["sub"]?.stringValue ?? token.idToken?.subject
        guard subject != expected else { return }
        var revoked = false
        if session.provider.configuration.revocationEndpoint != nil {
            do throws(OAuth2Error) {
                try await session.provider.revoke(token)
                revoked = true
            } catch {
                logger.debug("could not revoke the token issued for another account", metadata: ["oauth2.error": "\(error.code)"])
            }
        }
        let what = subject == nil ? "names no account (sub)" : "is for another account (sub) than the one expected"
        throw OAuth2Error(
            code: .subjectMismatch,
            message: "the token response \(what); the token is not kept\(revoked ? " and was revoked at the provider" : "")")
    }

    /// The `resource` parameter of an authorize URL, if it has exactly one.
    static func resourceParameter(of url: URL) -> String? {
        guard let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems else { return nil }
        let resources = items.filter { $0.name == "resource" }.compactMap(\.value)
        return resources.count == 1 ? resources[0] : nil
    }
}
