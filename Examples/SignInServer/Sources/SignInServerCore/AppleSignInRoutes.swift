import Crypto
import Foundation
import Hummingbird
import Logging
import OAuth2

/// "Sign in with Apple": Apple answers with a POST from its own site to the
/// redirect URI (`response_mode=form_post`), which changes the cookie rules.
///
/// The session cookie is `SameSite=Lax`, and a browser does not send a Lax
/// cookie with a cross-site POST: Apple's POST arrives without the session
/// that holds the pending sign-in. Loosening the cookie (`SameSite=None`)
/// would send it with every cross-site POST to this site, which Lax is there
/// to prevent. Instead the POST from Apple is bounced: ``callback`` reads
/// nothing but the form, changes nothing, and answers with a page that posts
/// the same fields to ``finish`` on this site. That second POST comes from
/// this site's own page, so it is same-site and carries the Lax cookie, and
/// ``finish`` then checks the state against the session exactly as the GET
/// callback does (taken once, across instances). Nothing is kept between the
/// two requests, so any instance can serve either, and ``finish`` refuses a
/// POST whose `Origin` is another site's.
struct AppleSignInRoutes: Sendable {
    let app: SignInApp
    let apple: OAuth2Provider

    /// The bounce page's script, allowed by its hash alone.
    static let submitScript = "document.forms[0].submit();"
    static let submitScriptHash = Data(SHA256.hash(data: Data(submitScript.utf8))).base64EncodedString()

    // MARK: - GET /login/apple

    /// Starts Sign in with Apple: `openid name email`, answered by form post.
    @Sendable func login(_ request: Request, context: some RequestContext) async throws -> Response {
        let pending: PendingAuthorization
        do throws(OAuth2Error) {
            pending = try await apple.authorizationURL(redirectURI: app.configuration.appleRedirectURI)
        } catch {
            context.logger.error("cannot start a sign-in with Apple", metadata: ["oauth2.error": "\(error.code)"])
            return Responses.html(Page.error("The sign-in could not be started.", code: error.code), status: .internalServerError)
        }
        let sessionID = try await app.sessions.startSignIn(pending, session: app.cookie.sessionID(in: request))
        var response = Responses.redirect(to: pending.url.absoluteString)
        response.setCookie(app.cookie.setting(sessionID))
        return response
    }

    // MARK: - POST /callback/apple

    /// Apple's cross-site POST: parsed (so that garbage is refused here) and
    /// posted again from a page of this site. Reads no cookie, writes none.
    @Sendable func callback(_ request: Request, context: some RequestContext) async throws -> Response {
        let body: String
        do throws(OAuth2Error) {
            body = try await Self.body(of: request)
            // Parsed only so that garbage is refused here rather than bounced.
            _ = try FormPostResponse(body: body)
        } catch {
            context.logger.notice("Apple's callback refused", metadata: ["oauth2.error": "\(error.code)"])
            return Responses.html(Page.error("The sign-in did not complete.", code: error.code), status: .badRequest)
        }
        return Self.bounce(body)
    }

    // MARK: - POST /callback/apple/finish

    /// The same fields, posted same-site with the session cookie: the state
    /// is checked against the session and the code exchanged.
    @Sendable func finish(_ request: Request, context: some RequestContext) async throws -> Response {
        if let origin = request.headers[.origin], origin != app.configuration.publicOrigin {
            return Responses.html(Page.failure("The sign-in must be finished from this site."), status: .forbidden)
        }
        let sessionID = app.cookie.sessionID(in: request)
        let token: AccessToken
        let form: FormPostResponse
        do throws(OAuth2Error) {
            form = try await Self.form(of: request)
            // Taken before the exchange, atomically, as the GET callback does.
            var pending: PendingAuthorization?
            if let state = form.state {
                pending = try await Self.take(app.sessions, sessionID, state)
            }
            guard let pending else {
                throw OAuth2Error(code: .stateMismatch, message: "no sign-in is pending for this session")
            }
            token = try await apple.token(for: .authorizationCode(formPost: form, pending: pending))
        } catch {
            context.logger.notice("Apple's callback refused", metadata: ["oauth2.error": "\(error.code)"])
            return Responses.html(Page.error("The sign-in did not complete.", code: error.code), status: .badRequest)
        }
        if form.user != nil {
            // Apple shares the name once, on the first sign-in, unsigned: a
            // real app saves it with the new account now (it is never sent
            // again), as a display name only, never as identity.
            context.logger.info("Apple shared the user's name on this first sign-in")
        }
        return try await SignInRoutes(app: app).complete(token, from: apple, session: sessionID, context: context)
    }

    // MARK: - Helpers

    /// The largest form read: the framework's own limit.
    static let maxBody = FormPostResponse.maxBodySize

    private static func body(of request: Request) async throws(OAuth2Error) -> String {
        do {
            return String(buffer: try await request.body.collect(upTo: maxBody))
        } catch {
            throw OAuth2Error(code: .responseTooLarge, message: "the posted answer is over \(maxBody) bytes")
        }
    }

    private static func form(of request: Request) async throws(OAuth2Error) -> FormPostResponse {
        try FormPostResponse(body: try await body(of: request))
    }

    private static func take(_ sessions: any SessionStore, _ id: String?, _ state: String) async throws(OAuth2Error)
        -> PendingAuthorization?
    {
        do {
            return try await sessions.takePendingSignIn(of: id, state: state)
        } catch {
            throw OAuth2Error(code: .storeError, message: "the session store failed")
        }
    }

    /// The name and value pairs of a form body already checked by ``FormPostResponse``.
    static func formFields(_ body: String) -> [(String, String)] {
        body.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    /// A page that posts `body`'s fields to ``finish`` (its script allowed by
    /// hash; a button without scripts). The fields are HTML-escaped: they came from outside.
    static func bounce(_ body: String) -> Response {
        let inputs = formFields(body).map { name, value in
            #"<input type="hidden" name="\#(HTML.escape(name))" value="\#(HTML.escape(value))">"#
        }.joined(separator: "\n")
        let page = """
            <!doctype html>
            <html lang="en">
            <head><meta charset="utf-8"><title>Signing in</title></head>
            <body>
            <form method="post" action="\(SignInConfiguration.appleFinishPath)">
            \(inputs)
            <noscript><button type="submit">Continue</button></noscript>
            </form>
            <script>\(submitScript)</script>
            </body>
            </html>

            """
        var response = Responses.html(page)
        response.headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'sha256-\(submitScriptHash)'; form-action 'self'; frame-ancestors 'none'"
        return response
    }
}
