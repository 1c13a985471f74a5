import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// Signing in through OpenID Connect: the app discovers the local provider
/// from its issuer, asks for `openid profile email read`, and keys each
/// user's token by the ID token's (`iss`, `sub`) without calling the API.
@Suite(.serialized, .enabled(if: ProviderEnvironment.main != nil, ProviderEnvironment.disabledReason))
struct OpenIDSignInTests {
    let provider: ProviderEnvironment
    let setup = TestApp.Setup(openID: true)

    init() throws {
        provider = try requireValue(ProviderEnvironment.main, "no provider")
    }

    @Test func discoveryGivesTheEndpointsAndTheSignInAsksForAnIDToken() async throws {
        try await TestApp.with(provider, setup: setup) { app in
            #expect(app.app.configuration.apiURL == nil)
            #expect(app.app.configuration.identifiesUsersByIDToken)
            #expect(app.app.configuration.oauth2.tokenEndpoint == provider.endpoints.token)
            // Not in the discovery document: SIGNIN_REVOKE_URL gives it.
            #expect(app.app.configuration.oauth2.revocationEndpoint == provider.endpoints.revoke)

            let response = try await app.browser().get("/login")
            #expect(response.status == 303)
            #expect(response.location?.hasPrefix(provider.endpoints.authorize.absoluteString + "?") == true)
            let location = try #require(response.location.flatMap { URLComponents(string: $0) })
            let query = Dictionary(uniqueKeysWithValues: (location.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(query["scope"] == TestApp.openIDScopes)
            #expect((query["nonce"] ?? "").count >= 22)
        }
    }

    @Test func aUserIsKeyedByIssuerAndSubjectAndMeShowsTheirClaims() async throws {
        try await TestApp.with(provider, setup: setup) { app in
            let browser = app.browser()
            try await app.signIn(browser, as: "alice")
            let alice = try provider.user("alice")

            let me = try #require(try await claims(from: browser.get("/me")))
            #expect(me["issuer"] as? String == provider.issuer)
            #expect(me["email"] as? String == alice.email)
            #expect(me["name"] as? String == alice.name)
            #expect(me["preferred_username"] as? String == "alice")
            let subject = try #require(me["subject"] as? String)
            #expect(!subject.isEmpty)
            // The userinfo endpoint, asked through the client, is about the same user.
            #expect((me["userinfo"] as? [String: Any])?["sub"] as? String == subject)
            #expect(me["id_token"] == nil && me["access_token"] == nil)

            // The session's account and the store's only token are the (iss, sub) one.
            let account = AccountKey.subject(issuer: provider.issuer, subject: subject)
            #expect(try await app.app.sessions.account(of: try #require(browser.sessionID)) == account)
            let token = try #require(try await app.storedToken(subject: subject))
            #expect(token.idToken?.subject == subject)
            #expect(token.idToken?.issuer == provider.issuer)
            #expect(try await app.storedToken(of: "alice") == nil)
            let tokenFile = try FileTokenStore.fileName(for: account)
            let files = Set(try FileManager.default.contentsOfDirectory(atPath: app.storeDirectory))
            #expect(files == [tokenFile, String(tokenFile.dropLast(".token".count)) + ".lock"])

            let home = try await browser.get("/").bodyText
            #expect(home.contains(#"<strong id="username">\#(alice.name ?? "")</strong>"#))
            for secret in [token.accessToken.value, token.rawIDToken?.value].compactMap({ $0 }) {
                #expect(!home.contains(secret))
                #expect(!(try await browser.get("/me").bodyText.contains(secret)))
            }

            // Signing out revokes and deletes the token as for any user.
            #expect(try await browser.post("/logout").status == 303)
            #expect(try await app.storedToken(subject: subject) == nil)
            #expect(try await browser.get("/me").location == "/login")
            #expect(!(try await app.providerAccepts(token)))
        }
    }

    @Test func twoUsersGetTwoAccounts() async throws {
        try await TestApp.with(provider, setup: setup) { app in
            let alice = app.browser()
            let bob = app.browser()
            try await app.signIn(alice, as: "alice")
            try await app.signIn(bob, as: "bob")

            let aliceClaims = try #require(try await claims(from: alice.get("/me")))
            let bobClaims = try #require(try await claims(from: bob.get("/me")))
            #expect(aliceClaims["email"] as? String == (try provider.user("alice").email))
            #expect(bobClaims["email"] as? String == (try provider.user("bob").email))
            let aliceSubject = try #require(aliceClaims["subject"] as? String)
            let bobSubject = try #require(bobClaims["subject"] as? String)
            #expect(aliceSubject != bobSubject)

            let aliceAccount = try await app.app.sessions.account(of: try #require(alice.sessionID))
            let bobAccount = try await app.app.sessions.account(of: try #require(bob.sessionID))
            #expect(aliceAccount == AccountKey.subject(issuer: provider.issuer, subject: aliceSubject))
            #expect(bobAccount == AccountKey.subject(issuer: provider.issuer, subject: bobSubject))
            #expect(aliceAccount != bobAccount)
            #expect(try await app.storedToken(subject: aliceSubject)?.idToken?.preferredUsername == "alice")
            #expect(try await app.storedToken(subject: bobSubject)?.idToken?.preferredUsername == "bob")
        }
    }

    @Test func aSecondSignInFromAnotherBrowserLandsOnTheSameAccount() async throws {
        try await TestApp.with(provider, setup: setup) { app in
            let laptop = app.browser()
            let phone = app.browser()
            try await app.signIn(laptop, as: "alice")
            let subject = try #require(try await claims(from: laptop.get("/me"))?["subject"] as? String)
            let first = try #require(try await app.storedToken(subject: subject))

            try await app.signIn(phone, as: "alice")
            let account = AccountKey.subject(issuer: provider.issuer, subject: subject)
            #expect(try await app.app.sessions.account(of: try #require(phone.sessionID)) == account)
            #expect(try await app.app.sessions.account(of: try #require(laptop.sessionID)) == account)
            // One token for the user: the second grant's; the first was revoked at the provider.
            let second = try #require(try await app.storedToken(subject: subject))
            #expect(second.accessToken != first.accessToken)
            #expect(!(try await app.providerAccepts(first)))
            #expect(try FileManager.default.contentsOfDirectory(atPath: app.storeDirectory).filter { $0.hasSuffix(".token") }.count == 1)
            // Both browsers go on, with the new token.
            #expect(try await claims(from: laptop.get("/me"))?["subject"] as? String == subject)
            #expect(try await claims(from: phone.get("/me"))?["subject"] as? String == subject)
        }
    }

    @Test func theOAuthOnlyAppStillAsksTheAPIAlongsideAnOpenIDOne() async throws {
        // The same provider, without `openid`: the API names the user, as before.
        try await TestApp.with(provider) { app in
            let browser = app.browser()
            try await app.signIn(browser, as: "alice")
            #expect(try await app.app.sessions.account(of: try #require(browser.sessionID)) == AccountKey.user("alice"))
            #expect(try await username(from: browser.get("/me")) == "alice")
        }
    }
}

/// The JSON object of a `/me` answer, or `nil` when it was not one.
func claims(from response: HTTPTransportResponse) -> [String: Any]? {
    guard response.status == 200 else { return nil }
    return try? JSONSerialization.jsonObject(with: response.body) as? [String: Any]
}
