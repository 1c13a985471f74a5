import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// What happens to a signed-in user's token: refreshed when it expires,
/// lost when the provider or the store no longer has it, revoked on sign-out.
@Suite(.serialized, .enabled(if: ProviderEnvironment.main != nil && ProviderEnvironment.short != nil, ProviderEnvironment.disabledReason))
struct TokenLifecycleTests {
    let provider: ProviderEnvironment
    let shortProvider: ProviderEnvironment

    init() throws {
        provider = try requireValue(ProviderEnvironment.main, "no provider")
        shortProvider = try requireValue(ProviderEnvironment.short, "no short-lived provider")
    }

    @Test func anExpiredTokenIsRefreshedWhenTheUserCallsMe() async throws {
        try await TestApp.with(shortProvider, expirySkew: 0) { app in
            let alice = app.browser()
            let before = try await app.signInAndLetTheTokenExpire(alice, as: "alice")

            #expect(try await username(from: alice.get("/me")) == "alice")
            let after = try #require(try await app.storedToken(of: "alice"))
            #expect(after.accessToken != before.accessToken)
            #expect(after.refreshToken != before.refreshToken)
        }
    }

    @Test func aTokenGoneFromTheStoreSendsTheUserBackToLogin() async throws {
        try await TestApp.with(provider) { app in
            let alice = app.browser()
            try await app.signIn(alice, as: "alice")
            try await app.store.delete(account: AccountKey.user("alice"))

            let response = try await alice.get("/me")
            #expect(response.status == 303)
            #expect(response.location == "/login")
            #expect(try await alice.get("/").bodyText.contains("You are not signed in"))
        }
    }

    @Test func aGrantRevokedAtTheProviderSendsTheUserBackToLogin() async throws {
        try await TestApp.with(provider) { app in
            let alice = app.browser()
            try await app.signIn(alice, as: "alice")
            let token = try #require(try await app.storedToken(of: "alice"))
            // Revoke behind the app's back, as the user would at the provider's "connected apps" page.
            try await OAuth2Provider(configuration: app.app.configuration.oauth2, transport: TestBrowser.transport).revoke(token)

            let response = try await alice.get("/me")
            #expect(response.status == 303)
            #expect(response.location == "/login")
            #expect(try await app.storedToken(of: "alice") == nil)
        }
    }

    @Test func signingOutRevokesThatUsersTokenAndKeepsTheOtherSignedIn() async throws {
        try await TestApp.with(provider) { app in
            let alice = app.browser()
            let bob = app.browser()
            try await app.signIn(alice, as: "alice")
            try await app.signIn(bob, as: "bob")
            let aliceToken = try #require(try await app.storedToken(of: "alice"))

            let response = try await alice.post("/logout")
            #expect(response.status == 303)
            #expect(response.location == "/")
            #expect(alice.sessionID == nil)
            #expect(try await app.storedToken(of: "alice") == nil)
            #expect(!(try await app.providerAccepts(aliceToken)))
            #expect(try await alice.get("/").bodyText.contains("You are not signed in"))
            #expect(try await alice.get("/me").location == "/login")

            #expect(try await username(from: bob.get("/me")) == "bob")
        }
    }

    @Test func signingOutEndsTheUsersSessionsInOtherBrowsersToo() async throws {
        try await TestApp.with(provider) { app in
            let laptop = app.browser()
            let phone = app.browser()
            try await app.signIn(laptop, as: "alice")
            try await app.signIn(phone, as: "alice")

            _ = try await laptop.post("/logout")
            try await app.signIn(app.browser(), as: "alice")
            // The phone's session ended with the sign-out: a later sign-in elsewhere does not revive it.
            #expect(try await phone.get("/").bodyText.contains("You are not signed in"))
        }
    }

    @Test func aSignOutPostedFromAnotherSiteIsRefused() async throws {
        try await TestApp.with(provider) { app in
            let alice = app.browser()
            try await app.signIn(alice, as: "alice")

            let response = try await alice.post("/logout", headers: [("Origin", "https://attacker.example")])
            #expect(response.status == 403)
            #expect(try await app.storedToken(of: "alice") != nil)
            #expect(try await username(from: alice.get("/me")) == "alice")
        }
    }

    @Test func signingInAgainRevokesTheUsersEarlierGrantAndBothBrowsersStaySignedIn() async throws {
        try await TestApp.with(provider) { app in
            let laptop = app.browser()
            let phone = app.browser()
            try await app.signIn(laptop, as: "alice")
            let first = try #require(try await app.storedToken(of: "alice"))
            try await app.signIn(phone, as: "alice")

            #expect(!(try await app.providerAccepts(first)))
            #expect(try await username(from: laptop.get("/me")) == "alice")
            #expect(try await username(from: phone.get("/me")) == "alice")
        }
    }
}
