import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// Forged and replayed callbacks: a 400 with the framework's error code, and nothing changes.
@Suite(.serialized, .enabled(if: ProviderEnvironment.main != nil, ProviderEnvironment.disabledReason))
struct CallbackSecurityTests {
    let provider: ProviderEnvironment

    init() throws {
        provider = try requireValue(ProviderEnvironment.main, "no provider")
    }

    @Test func aCallbackWithAWrongStateIsRefusedAndTheSignInCanStillFinish() async throws {
        try await TestApp.with(provider) { app in
            let alice = app.browser()
            let callback = try await app.startSignIn(alice, as: "alice")
            let sessionID = alice.sessionID
            let forged = callback.replacingOccurrences(of: "state=", with: "state=forged")

            let refused = try await alice.follow(forged)
            #expect(refused.status == 400)
            #expect(refused.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            #expect(refused.headers[.setCookie] == nil)
            #expect(alice.sessionID == sessionID)
            #expect(try await app.storedToken(of: "alice") == nil)

            let finished = try await alice.follow(callback)
            #expect(finished.status == 303)
            #expect(try await username(from: alice.get("/me")) == "alice")
        }
    }

    @Test func aForgedCallbackLeavesASignedInUserAsTheyWere() async throws {
        try await TestApp.with(provider) { app in
            let bob = app.browser()
            try await app.signIn(bob, as: "bob")
            let token = try await app.storedToken(of: "bob")
            let forged = "/callback?code=forged&state=forged&iss=\(provider.issuer)"

            let refused = try await bob.follow(app.baseURL.absoluteString + forged)
            #expect(refused.status == 400)
            #expect(refused.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            #expect(try await app.storedToken(of: "bob") == token)
            #expect(try await username(from: bob.get("/me")) == "bob")
        }
    }

    @Test func aReplayedCallbackIsRefusedAndChangesNothing() async throws {
        try await TestApp.with(provider) { app in
            let bob = app.browser()
            let callback = try await app.signIn(bob, as: "bob")
            let token = try await app.storedToken(of: "bob")

            let replayed = try await bob.follow(callback)
            #expect(replayed.status == 400)
            #expect(replayed.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            #expect(try await app.storedToken(of: "bob") == token)
            #expect(try await username(from: bob.get("/me")) == "bob")
        }
    }

    @Test func aCallbackReplayedFromAnotherBrowserSignsNobodyIn() async throws {
        try await TestApp.with(provider) { app in
            let callback = try await app.signIn(app.browser(), as: "bob")
            let attacker = app.browser()

            let replayed = try await attacker.follow(callback)
            #expect(replayed.status == 400)
            #expect(replayed.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            #expect(attacker.sessionID == nil)
            #expect(try await attacker.get("/").bodyText.contains("You are not signed in"))
        }
    }

    @Test func aCallbackDeliveredToAnotherBrowserIsRefused() async throws {
        try await TestApp.with(provider) { app in
            // Login CSRF: the attacker's consented callback must not sign the victim in as the attacker.
            let callback = try await app.startSignIn(app.browser(), as: "alice")
            let victim = app.browser()
            _ = try await victim.get("/login")

            let response = try await victim.follow(callback)
            #expect(response.status == 400)
            #expect(response.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            #expect(try await victim.get("/").bodyText.contains("You are not signed in"))
        }
    }
}
