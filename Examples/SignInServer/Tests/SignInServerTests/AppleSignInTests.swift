import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// "Sign in with Apple" in the example, against the provider that behaves as
/// Apple documents ("Incorporating Sign in with Apple into other platforms",
/// "Configuring your webpage for Sign in with Apple"): Apple's page posts the
/// answer to the app from Apple's site, so the browser sends no `SameSite=Lax`
/// cookie with it; the app bounces it to a same-site POST that carries the
/// session, and checks the state there.
@Suite(
    .serialized,
    .enabled(if: ProviderEnvironment.main != nil && AppleEnvironment.isConfigured, "needs OAUTH2_IT_PROVIDER and OAUTH2_IT_APPLE_PROVIDER"))
struct AppleSignInTests {
    let provider: ProviderEnvironment
    let apple: AppleEnvironment

    init() throws {
        provider = try requireValue(ProviderEnvironment.main, "no provider")
        apple = try AppleEnvironment.load()
    }

    /// Where Apple's page posts, and what: the browser at Apple's authorize URL.
    func authorizeAtApple(_ browser: TestBrowser) async throws -> (action: String, body: String) {
        let login = try await browser.get("/login/apple")
        guard login.status == 303, let url = login.location else { throw TestFailure("/login/apple answered \(login.status)") }
        #expect(url.hasPrefix(apple.issuer + "/auth/authorize?"))
        #expect(url.contains("response_mode=form_post"))
        return try await apple.authorize(url + "&test_user=example-\(UUID().uuidString)")
    }

    @Test func aSignInWithAppleCompletesThroughTheSameSiteBounce() async throws {
        try await TestApp.with(provider, setup: TestApp.Setup(apple: apple)) { app in
            let browser = app.browser()
            let (action, body) = try await authorizeAtApple(browser)
            #expect(action == app.baseURL.absoluteString + SignInConfiguration.appleCallbackPath)
            let sessionBefore = browser.sessionID

            // Apple's cross-site POST: no cookie; the app answers with its bounce page and touches nothing.
            let bounce = try await browser.postForm(SignInConfiguration.appleCallbackPath, body: body, from: apple.issuer)
            #expect(bounce.status == 200)
            #expect(bounce.headers[.setCookie] == nil)
            #expect(bounce.headers[.contentSecurityPolicy]?.contains("script-src 'sha256-") == true)
            let (finishAction, finishBody) = try AppleEnvironment.form(in: bounce.bodyText)
            #expect(finishAction == SignInConfiguration.appleFinishPath)
            #expect(finishBody == body)

            // The page's own POST: same-site, with the session cookie.
            let finished = try await browser.postForm(
                finishAction, body: finishBody, from: app.baseURL.absoluteString.trimmingTrailingSlash)
            #expect(finished.status == 303, "\(finished.bodyText)")
            #expect(finished.location == "/")
            #expect(browser.sessionID != sessionBefore)

            let me = try #require(claims(from: try await browser.get("/me")))
            #expect(me["issuer"] as? String == apple.issuer)
            let subject = try #require(me["subject"] as? String)
            let account = AccountKey.subject(issuer: apple.issuer, subject: subject)
            #expect(try await app.app.sessions.account(of: try #require(browser.sessionID)) == account)
            #expect(try await app.store.load(account: account)?.idToken?.isPrivateEmail == true)

            // Signing out revokes at Apple's revocation endpoint, with the signed client secret.
            let logout = try await browser.post("/logout", headers: [("Origin", app.baseURL.absoluteString.trimmingTrailingSlash)])
            #expect(logout.status == 303)
            #expect(try await app.store.load(account: account) == nil)
        }
    }

    @Test func theFinishWithoutTheSessionOrFromAnotherSiteIsRefused() async throws {
        try await TestApp.with(provider, setup: TestApp.Setup(apple: apple)) { app in
            let browser = app.browser()
            let (_, body) = try await authorizeAtApple(browser)
            // Apple's POST straight to the finish: cross-site, refused by its Origin.
            let crossSite = try await browser.postForm(SignInConfiguration.appleFinishPath, body: body, from: apple.issuer)
            #expect(crossSite.status == 403)
            // Another browser (no session of this sign-in) replaying the form: the state check refuses it.
            let other = app.browser()
            let foreign = try await other.postForm(
                SignInConfiguration.appleFinishPath, body: body, from: app.baseURL.absoluteString.trimmingTrailingSlash)
            #expect(foreign.status == 400)
            #expect(foreign.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            // The right browser still finishes: the forged attempts spent nothing.
            let finished = try await browser.postForm(
                SignInConfiguration.appleFinishPath, body: body, from: app.baseURL.absoluteString.trimmingTrailingSlash)
            #expect(finished.status == 303)
            // And only once.
            let replay = try await browser.postForm(
                SignInConfiguration.appleFinishPath, body: body, from: app.baseURL.absoluteString.trimmingTrailingSlash)
            #expect(replay.status == 400)
        }
    }

    @Test func garbageFromAppleIsRefusedNotBounced() async throws {
        try await TestApp.with(provider, setup: TestApp.Setup(apple: apple)) { app in
            let browser = app.browser()
            let refused = try await browser.postForm(SignInConfiguration.appleCallbackPath, body: "state=a&state=b", from: apple.issuer)
            #expect(refused.status == 400)
            #expect(refused.bodyText.contains(#"<code id="error-code">duplicate_parameter</code>"#))
        }
    }
}
