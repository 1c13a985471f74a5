import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// The sign-in flow end to end: the app in this process, the local provider,
/// alice and bob in separate browsers.
@Suite(.serialized, .enabled(if: ProviderEnvironment.main != nil, ProviderEnvironment.disabledReason))
struct SignInFlowTests {
    let provider: ProviderEnvironment

    init() throws {
        provider = try requireValue(ProviderEnvironment.main, "no provider")
    }

    @Test func aVisitorWithoutASessionIsNotSignedIn() async throws {
        try await TestApp.with(provider) { app in
            let response = try await app.browser().get("/")
            #expect(response.status == 200)
            #expect(response.bodyText.contains("You are not signed in"))
        }
    }

    @Test func loginKeepsThePendingAuthorizationServerSideAndSendsTheBrowserToTheProvider() async throws {
        try await TestApp.with(provider) { app in
            let browser = app.browser()
            let response = try await browser.get("/login")

            #expect(response.status == 303)
            #expect(response.location?.hasPrefix(provider.endpoints.authorize.absoluteString + "?") == true)
            let location = try #require(response.location.flatMap { URLComponents(string: $0) })
            let query = Dictionary(uniqueKeysWithValues: (location.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(query["response_type"] == "code")
            #expect(query["code_challenge_method"] == "S256")
            #expect(query["redirect_uri"] == "\(app.baseURL.absoluteString)/callback")

            let sessionID = try #require(browser.sessionID)
            #expect(sessionID.count >= 43)
            #expect(!(response.location ?? "").contains(sessionID))
            let pending = try #require(try await app.app.sessions.pendingSignIn(of: sessionID))
            #expect(pending.state == query["state"])
        }
    }

    @Test func theSessionCookieIsHttpOnlyAndSameSiteLaxAndNotSecureOverHTTP() async throws {
        try await TestApp.with(provider) { app in
            let response = try await app.browser().get("/login")
            let setCookie = try #require(response.headers[.setCookie])
            let attributes = Set(setCookie.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
            #expect(attributes.contains("httponly"))
            #expect(attributes.contains("samesite=lax"))
            #expect(attributes.contains("path=/"))
            #expect(!attributes.contains("secure"))
        }
    }

    @Test func twoUsersSignInAndEachSeesTheirOwnName() async throws {
        try await TestApp.with(provider) { app in
            let alice = app.browser()
            let bob = app.browser()
            try await app.signIn(alice, as: "alice")
            try await app.signIn(bob, as: "bob")

            #expect(try await alice.get("/").bodyText.contains(#"<strong id="username">alice</strong>"#))
            #expect(try await bob.get("/").bodyText.contains(#"<strong id="username">bob</strong>"#))
            #expect(try await username(from: alice.get("/me")) == "alice")
            #expect(try await username(from: bob.get("/me")) == "bob")
        }
    }

    @Test func eachUsersTokenIsStoredUnderTheirNameAndNothingElseIsLeft() async throws {
        try await TestApp.with(provider) { app in
            try await app.signIn(app.browser(), as: "alice")
            try await app.signIn(app.browser(), as: "bob")

            #expect(try await app.storedToken(of: "alice") != nil)
            #expect(try await app.storedToken(of: "bob") != nil)
            // One token file per user and its lock file (empty, kept by design:
            // see FileTokenStore.withLock); no account was made for the sign-in itself.
            let files = Set(try FileManager.default.contentsOfDirectory(atPath: app.storeDirectory))
            var expected: Set<String> = []
            for user in ["alice", "bob"] {
                let tokenFile = try FileTokenStore.fileName(for: AccountKey.user(user))
                expected.insert(tokenFile)
                expected.insert(String(tokenFile.dropLast(".token".count)) + ".lock")
            }
            #expect(files == expected, "no sign-in leftovers")
        }
    }

    @Test func signingInIssuesANewSessionID() async throws {
        try await TestApp.with(provider) { app in
            let browser = app.browser()
            let callback = try await app.startSignIn(browser, as: "alice")
            let before = try #require(browser.sessionID)
            _ = try await browser.follow(callback)
            let after = try #require(browser.sessionID)

            #expect(after != before)
            #expect(try await app.app.sessions.account(of: before) == nil)
            #expect(try await app.app.sessions.account(of: after) == AccountKey.user("alice"))
        }
    }

    @Test func manyConcurrentRequestsOfTwoUsersNeverMix() async throws {
        try await TestApp.with(provider) { app in
            let alice = app.browser()
            let bob = app.browser()
            try await app.signIn(alice, as: "alice")
            try await app.signIn(bob, as: "bob")

            let names = try await withThrowingTaskGroup(of: (String, String?).self) { group in
                for _ in 0..<10 {
                    group.addTask { ("alice", try await username(from: alice.get("/me"))) }
                    group.addTask { ("bob", try await username(from: bob.get("/me"))) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(names.count == 20)
            for (expected, seen) in names {
                #expect(seen == expected)
            }
        }
    }

    @Test func tokensAreEncryptedAtRestAndNeverShown() async throws {
        try await TestApp.with(provider) { app in
            let browser = app.browser()
            try await app.signIn(browser, as: "alice")
            let token = try #require(try await app.storedToken(of: "alice"))
            let secrets = [token.accessToken.value] + (token.refreshToken.map { [$0.value] } ?? [])

            let files = try FileManager.default.contentsOfDirectory(atPath: app.storeDirectory)
            for file in files {
                let contents = try Data(contentsOf: URL(fileURLWithPath: app.storeDirectory).appendingPathComponent(file))
                for secret in secrets {
                    #expect(contents.range(of: Data(secret.utf8)) == nil)
                }
            }
            for path in ["/", "/me"] {
                let body = try await browser.get(path).bodyText
                for secret in secrets {
                    #expect(!body.contains(secret))
                }
            }
        }
    }

    @Test func aUserWhoDeniesConsentGetsTheProvidersErrorCode() async throws {
        // DOT leaves `iss` out of error redirects (RFC 9207 asks for it there too);
        // an app that requires `iss` would see `missing_issuer` instead.
        try await TestApp.with(provider, requireIssuer: false) { app in
            let browser = app.browser()
            let callback = try await app.startSignIn(browser, as: "alice", deny: true)
            let response = try await browser.follow(callback)

            #expect(response.status == 400)
            #expect(response.bodyText.contains(#"<code id="error-code">access_denied</code>"#))
            #expect(try await browser.get("/").bodyText.contains("You are not signed in"))
        }
    }
}

/// The `username` of a `/me` answer, or `nil` when it was not the API's JSON.
func username(from response: HTTPTransportResponse) -> String? {
    guard response.status == 200,
        let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any]
    else {
        return nil
    }
    return object["username"] as? String
}
