import Foundation
import Hummingbird
import Logging
import OAuth2

/// The five routes. Each one reads the session from the cookie, asks the
/// framework to do the OAuth part, and turns the outcome into a page.
struct SignInRoutes: Sendable {
    let app: SignInApp

    private var provider: OAuth2Provider { app.provider }
    private var sessions: any SessionStore { app.sessions }
    private var configuration: SignInConfiguration { app.configuration }

    // MARK: - GET /

    /// Who the visitor is, as the ID token or the provider's API says; "not
    /// signed in" when there is no session or its token is gone.
    @Sendable func home(_ request: Request, context: some RequestContext) async throws -> Response {
        let sessionID = app.cookie.sessionID(in: request)
        guard let account = try await sessions.account(of: sessionID) else {
            return Responses.html(Page.signedOut())
        }
        do throws(ProfileError) {
            let identity = try await identity(of: account)
            return Responses.html(Page.signedIn(as: identity.displayName))
        } catch  where error.tokenLost {
            try await sessions.forgetAccount(of: sessionID)
            return Responses.html(Page.signedOut())
        } catch {
            return apiFailure(error, context: context)
        }
    }

    // MARK: - GET /login

    /// Starts the authorization-code flow with PKCE and sends the browser to the provider.
    ///
    /// The pending authorization (state, verifier, redirect URI) stays in the
    /// server-side session; the browser gets only the session id, in a cookie.
    @Sendable func login(_ request: Request, context: some RequestContext) async throws -> Response {
        let pending: PendingAuthorization
        do throws(OAuth2Error) {
            // No account yet: whose token it will be is known only once it exists.
            pending = try await provider.authorizationURL(redirectURI: configuration.redirectURI, scopes: configuration.scopes)
        } catch {
            context.logger.error("cannot start a sign-in", metadata: ["oauth2.error": "\(error.code)"])
            return Responses.html(Page.error("The sign-in could not be started.", code: error.code), status: .internalServerError)
        }
        let sessionID = try await sessions.startSignIn(pending, session: app.cookie.sessionID(in: request))
        var response = Responses.redirect(to: pending.url.absoluteString)
        response.setCookie(app.cookie.setting(sessionID))
        return response
    }

    // MARK: - GET /callback

    /// Finishes the flow: exchange, learn who it is, adopt.
    ///
    /// The framework validates the redirect against the session's pending
    /// authorization and exchanges the code for a token that belongs to no
    /// account yet. With OpenID Connect the token comes with an ID token the
    /// framework verified (signature, issuer, audience, lifetime, nonce), and
    /// its `iss` and `sub` say whose it is
    /// (``AccountKey/subject(issuer:subject:)``); without one the provider's
    /// API, called with that token, says it (``AccountKey/user(_:)``). The
    /// token is then adopted as that user's, and the user's
    /// earlier grant, if any (a sign-in from another browser), is revoked
    /// rather than left alive at the provider.
    ///
    /// The session's pending sign-in is taken only by a callback carrying its
    /// `state`, and only once across every instance that shares the sessions
    /// (two instances handed the same redirect: one exchanges the code, the
    /// other refuses it). A forged, replayed or expired callback is a 400
    /// with the framework's error code and changes nothing: the session
    /// keeps its pending sign-in and its account, and no token is written.
    /// A callback with the right state that the framework refuses (the user
    /// denied, a wrong `iss`) ends that sign-in; the user starts another.
    @Sendable func callback(_ request: Request, context: some RequestContext) async throws -> Response {
        let sessionID = app.cookie.sessionID(in: request)
        // The framework compares scheme, host, port and path with the pending
        // redirect URI; the app's public URI is the truth (a proxy may rewrite
        // Host), the query is what the provider sent.
        let redirect = configuration.redirectURI.absoluteString + (request.uri.query.map { "?\($0)" } ?? "")

        // Taken before the exchange, atomically: on this instance or another,
        // no second callback with this state gets it.
        var pending: PendingAuthorization?
        if let state = request.uri.queryParameters["state"] {
            pending = try await sessions.takePendingSignIn(of: sessionID, state: String(state))
        }

        let token: AccessToken
        do throws(OAuth2Error) {
            // No pending authorization (no session, an expired one, another
            // state, or a replay) is a state_mismatch too.
            guard let pending else {
                throw OAuth2Error(code: .stateMismatch, message: "no sign-in is pending for this session")
            }
            token = try await provider.token(for: .authorizationCode(redirect: redirect, pending: pending))
        } catch {
            context.logger.notice("callback refused", metadata: ["oauth2.error": "\(error.code)"])
            let status: HTTPResponse.Status = Self.isProviderUnreachable(error) ? .badGateway : .badRequest
            return Responses.html(Page.error("The sign-in did not complete.", code: error.code), status: status)
        }

        return try await complete(token, from: provider, session: sessionID, context: context)
    }

    /// The end of every sign-in, once the provider's token is in hand:
    /// learn whose it is, adopt it under that account (revoking the user's
    /// earlier grant), and start the signed-in session.
    func complete(_ token: AccessToken, from provider: OAuth2Provider, session sessionID: String?, context: some RequestContext)
        async throws -> Response
    {
        // Whose token is it? Only the provider knows: in the ID token it
        // signed, or through its API.
        let account: String
        if let idToken = token.idToken {
            account = AccountKey.subject(issuer: idToken.issuer, subject: idToken.subject)
        } else if let apiURL = configuration.apiURL {
            do throws(ProfileError) {
                let profile = try await UserProfile.fetch(
                    with: token, through: provider.transport, from: apiURL, field: configuration.userField)
                account = AccountKey.user(profile.username)
            } catch {
                try? await provider.revoke(token)
                return apiFailure(error, context: context)
            }
        } else {
            // The configuration has no API only when it asks for `openid`
            // from an OpenID provider, whose token responses carry an ID token.
            try? await provider.revoke(token)
            context.logger.warning("the token came without an ID token, and no API is configured to say whose it is")
            return Responses.html(Page.failure(ProfileError.noUsername.explanation), status: .badGateway)
        }

        let previous: AccessToken?
        do throws(OAuth2Error) {
            previous = try await provider.client(account: account).adopt(token)
        } catch {
            try? await provider.revoke(token)
            context.logger.error("cannot store the token", metadata: ["oauth2.error": "\(error.code)"])
            return Responses.html(Page.error("The sign-in could not be saved.", code: error.code), status: .internalServerError)
        }
        if let previous {
            do throws(OAuth2Error) {
                try await provider.revoke(previous)
            } catch {
                context.logger.warning("cannot revoke the user's previous grant", metadata: ["oauth2.error": "\(error.code)"])
            }
        }
        context.logger.info("signed in", metadata: ["account": "\(account)"])
        let newSessionID = try await sessions.completeSignIn(session: sessionID, account: account)
        var response = Responses.redirect(to: "/")
        response.setCookie(app.cookie.setting(newSessionID))
        return response
    }

    // MARK: - GET /me

    /// Who the signed-in user is, as JSON: an OpenID Connect user's ID token
    /// claims (issuer, subject, email, name) and what the userinfo endpoint
    /// says, or the provider's API answer for a user it named. Either goes
    /// through ``OAuth2Client/send(_:)`` (signed, refreshed when needed); a
    /// lost token sends the browser back to `/login`.
    @Sendable func me(_ request: Request, context: some RequestContext) async throws -> Response {
        let sessionID = app.cookie.sessionID(in: request)
        guard let account = try await sessions.account(of: sessionID) else {
            return Responses.redirect(to: "/login")
        }
        do throws(ProfileError) {
            return Responses.json(try await identity(of: account).body)
        } catch  where error.tokenLost {
            context.logger.info("token lost; signing in again", metadata: ["account": "\(account)"])
            try await sessions.forgetAccount(of: sessionID)
            return Responses.redirect(to: "/login")
        } catch {
            return apiFailure(error, context: context)
        }
    }

    // MARK: - POST /logout

    /// Revokes the user's token at the provider, deletes it, and ends every
    /// session of that user: the token is per user, so signing out is too.
    @Sendable func logout(_ request: Request, context: some RequestContext) async throws -> Response {
        // SameSite=Lax already keeps the cookie off cross-site POSTs; a
        // browser's Origin from elsewhere is refused as well.
        if let origin = request.headers[.origin], origin != configuration.publicOrigin {
            return Responses.html(Page.failure("Sign-out must come from this site."), status: .forbidden)
        }
        let sessionID = app.cookie.sessionID(in: request)
        if let account = try await sessions.account(of: sessionID) {
            do throws(OAuth2Error) {
                try await app.provider(for: account).client(account: account).logout()
            } catch {
                context.logger.error("cannot delete the token", metadata: ["oauth2.error": "\(error.code)"])
                return Responses.html(Page.error("The sign-out failed.", code: error.code), status: .internalServerError)
            }
            try await sessions.endAll(account: account)
            context.logger.info("signed out", metadata: ["account": "\(account)"])
        }
        try await sessions.end(sessionID)
        var response = Responses.redirect(to: "/")
        response.setCookie(app.cookie.clearing())
        return response
    }

    // MARK: - Helpers

    /// Who the account's user is: by the ID token for an OpenID Connect
    /// account, by the provider's API for the others.
    private func identity(of account: String) async throws(ProfileError) -> (displayName: String, body: Data) {
        let client = app.provider(for: account).client(account: account)
        if AccountKey.isSubject(account) {
            let profile = try await OpenIDProfile.load(for: client)
            return (profile.displayName, try profile.body)
        }
        guard let apiURL = configuration.apiURL else {
            // A session from before the app was switched to OpenID: sign in again.
            throw .oauth2(OAuth2Error(code: .notAuthenticated, message: "no API is configured to say who the account's user is"))
        }
        let profile = try await UserProfile.fetch(with: client, through: provider.transport, from: apiURL, field: configuration.userField)
        return (profile.username, profile.body)
    }

    private func apiFailure(_ error: ProfileError, context: some RequestContext) -> Response {
        switch error {
        case .oauth2(let oauth2Error):
            context.logger.warning("provider API call failed", metadata: ["oauth2.error": "\(oauth2Error.code)"])
            return Responses.html(Page.error(error.explanation, code: oauth2Error.code), status: .badGateway)
        case .unexpectedStatus, .noUsername:
            context.logger.warning("provider API answer unusable")
            return Responses.html(Page.failure(error.explanation), status: .badGateway)
        }
    }

    private static func isProviderUnreachable(_ error: OAuth2Error) -> Bool {
        [.transportError, .timeout, .tlsError, .cancelled].contains(error.code)
            || (error.httpStatus.map { $0 >= 500 } ?? false)
    }

}
