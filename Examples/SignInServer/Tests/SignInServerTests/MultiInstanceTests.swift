import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// Two instances of the app on one PostgreSQL database, as behind a load
/// balancer: each its own `SignInApp` with its own `PostgresClient` (its own
/// pool), the same tables and token key, and the same public redirect URI
/// (instance A's address); one browser's requests go to either. Any instance
/// serves any request.
///
/// The app is the provider's `public` client here, which no other suite
/// uses, so that the provider's count of its token requests is this suite's alone.
@Suite(
    .serialized,
    .enabled(if: ProviderEnvironment.main != nil && ProviderEnvironment.short != nil, ProviderEnvironment.disabledReason),
    .enabled(if: TestDatabase.isConfigured, TestDatabase.disabledReason)
)
struct MultiInstanceTests {
    /// Runs `body` with instances A and B on new tables of the test database,
    /// against the provider whose tokens live an hour, or 2 seconds.
    func withTwoInstances<T: Sendable>(
        shortLivedTokens: Bool = false,
        _ body: (TestApp, TestApp) async throws -> T
    ) async throws -> T {
        let provider = try requireValue(shortLivedTokens ? ProviderEnvironment.short : ProviderEnvironment.main, "no provider")
        let setup = TestApp.Setup(expirySkew: shortLivedTokens ? 0 : 60, client: "public", database: TestDatabase())
        return try await TestApp.with(provider, setup: setup) { a in
            var setupB = setup
            setupB.publicPort = a.baseURL.port
            return try await TestApp.with(provider, setup: setupB) { b in
                try await body(a, b)
            }
        }
    }

    @Test func aUserSignedInThroughOneInstanceIsSignedInOnTheOther() async throws {
        try await withTwoInstances { a, b in
            let alice = a.browser()
            try await a.signIn(alice, as: "alice")

            #expect(try await username(from: alice.get("/me", at: b)) == "alice")
            #expect(try await alice.get("/", at: b).bodyText.contains(#"<strong id="username">alice</strong>"#))
            // One token, in the shared table: each instance reads what the other wrote.
            let token = try #require(try await b.storedToken(of: "alice"))
            #expect(try await a.storedToken(of: "alice") == token)
        }
    }

    @Test func aSignInStartedOnOneInstanceFinishesOnTheOther() async throws {
        try await withTwoInstances { a, b in
            let bob = a.browser()
            let callback = try await a.startSignIn(bob, as: "bob")

            let finished = try await bob.follow(callback, at: b)
            #expect(finished.status == 303)
            #expect(finished.location == "/")
            #expect(try await username(from: bob.get("/me", at: a)) == "bob")
        }
    }

    @Test func anExpiredTokenIsRefreshedOnceForABurstOfCallsAcrossBothInstances() async throws {
        try await withTwoInstances(shortLivedTokens: true) { a, b in
            let alice = a.browser()
            let before = try await a.signInAndLetTheTokenExpire(alice, as: "alice")
            let refreshesBefore = try await a.provider.tokenRequestCount(client: "public", grantType: "refresh_token")

            // Both instances find the token expired at once; the token store's
            // lock (PostgreSQL's) lets one of them refresh, the others use its result.
            let names = try await withThrowingTaskGroup(of: String?.self) { group in
                for instance in [a, b, a, b, a, b] {
                    group.addTask { username(from: try await alice.get("/me", at: instance)) }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(names == Array(repeating: "alice", count: 6))
            let refreshes = try await a.provider.tokenRequestCount(client: "public", grantType: "refresh_token") - refreshesBefore
            #expect(refreshes == 1, "one refresh at the provider for the burst on both instances")

            let after = try #require(try await b.storedToken(of: "alice"))
            #expect(after.accessToken != before.accessToken)
            #expect(after.refreshToken != before.refreshToken)
            #expect(try await a.storedToken(of: "alice") == after)
        }
    }

    @Test func signingOutThroughOneInstanceEndsTheSessionOnTheOther() async throws {
        try await withTwoInstances { a, b in
            let alice = a.browser()
            let bob = b.browser()
            try await a.signIn(alice, as: "alice")
            try await b.signIn(bob, as: "bob")
            let aliceToken = try #require(try await a.storedToken(of: "alice"))
            let aliceSession = try #require(alice.sessionID)

            let response = try await alice.post("/logout", at: b)
            #expect(response.status == 303)
            #expect(alice.sessionID == nil)

            // The session ended in the shared table: A no longer knows it, even with the old cookie.
            #expect(try await a.app.sessions.account(of: aliceSession) == nil)
            #expect(try await alice.get("/", at: a).bodyText.contains("You are not signed in"))
            #expect(try await alice.get("/me", at: a).location == "/login")
            #expect(try await a.storedToken(of: "alice") == nil)
            #expect(!(try await a.providerAccepts(aliceToken)))
            // Another user's session is untouched, on either instance.
            #expect(try await username(from: bob.get("/me", at: a)) == "bob")
        }
    }

    @Test func aCallbackDeliveredToBothInstancesAtOnceIsExchangedOnce() async throws {
        try await withTwoInstances { a, b in
            let bob = a.browser()
            let callback = try await a.startSignIn(bob, as: "bob")
            let exchangesBefore = try await a.provider.tokenRequestCount(client: "public", grantType: "authorization_code")

            async let atA = bob.follow(callback, at: a)
            async let atB = bob.follow(callback, at: b)
            let responses = try await [atA, atB]

            #expect(responses.map(\.status.code).sorted() == [303, 400])
            let refused = try #require(responses.first { $0.status == 400 })
            #expect(refused.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            let exchanges = try await a.provider.tokenRequestCount(client: "public", grantType: "authorization_code") - exchangesBefore
            #expect(exchanges == 1, "only one instance took the pending sign-in and exchanged the code")
            #expect(try await username(from: bob.get("/me", at: b)) == "bob")
        }
    }

    @Test func aCallbackReplayedOnTheOtherInstanceIsRefused() async throws {
        try await withTwoInstances { a, b in
            let bob = a.browser()
            let callback = try await a.signIn(bob, as: "bob")
            let token = try await a.storedToken(of: "bob")

            for instance in [b, a] {
                let replayed = try await bob.follow(callback, at: instance)
                #expect(replayed.status == 400)
                #expect(replayed.bodyText.contains(#"<code id="error-code">state_mismatch</code>"#))
            }
            #expect(try await b.storedToken(of: "bob") == token)
            #expect(try await username(from: bob.get("/me", at: b)) == "bob")
        }
    }
}
