import Crypto
import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// Sign in with Apple through the library, against the provider that behaves
/// as Apple documents (Tests/AppleProvider/serve.py). Each test names the
/// page of Apple's documentation whose behaviour it checks.
@Suite(
    .enabled(if: AppleProvider.isConfigured, "needs the Apple-behaving provider: `make test` starts it and sets OAUTH2_IT_APPLE_PROVIDER"))
struct SignInWithAppleTests {
    /// The OAuth2Error `body` throws, or `nil` when it succeeds.
    static func error(_ body: () async throws -> Void) async -> OAuth2Error? {
        do {
            try await body()
            return nil
        } catch let error as OAuth2Error {
            return error
        } catch {
            Issue.record("expected an OAuth2Error, got \(error)")
            return nil
        }
    }

    /// A token of `provider`'s issuing, for revocation requests that only need one to send.
    static func someToken(of provider: OAuth2Provider) -> AccessToken {
        AccessToken(accessToken: Secret("at-unknown"), refreshToken: Secret("rt-unknown"), binding: provider.configuration.binding)
    }

    /// A user of the test provider no other test signs in, so that its first sign-in is this test's.
    static func freshUser() -> String { "user-\(UUID().uuidString)" }

    /// The authorize URL for a test user (`test_user` picks one on the test provider).
    static func start(_ provider: OAuth2Provider, _ apple: AppleProvider, user: String, action: String? = nil) async throws
        -> PendingAuthorization
    {
        var parameters = [("test_user", user)]
        if let action { parameters.append(("test_action", action)) }
        return try await provider.authorizationURL(
            redirectURI: URL(string: apple.redirectURI)!, scopes: nil, additionalParameters: parameters)
    }

    /// Signs `user` in: the authorize page's form, posted back to the library.
    static func signIn(_ provider: OAuth2Provider, _ apple: AppleProvider, user: String, transport: CurlTransport) async throws
        -> (AccessToken, FormPostResponse)
    {
        let pending = try await start(provider, apple, user: user)
        let (action, body) = try await apple.browse(pending.url, transport: transport)
        #expect(action == apple.redirectURI)
        let response = try FormPostResponse(body: body)
        let token = try await provider.token(for: .authorizationCode(formPost: response, pending: pending))
        return (token, response)
    }

    /// "Incorporating Sign in with Apple into other platforms" (the form post,
    /// `user` on the first authorization only) and "Authenticating users with
    /// Sign in with Apple" (the ID token's claims, booleans as strings).
    @Test func theFirstSignInPostsTheUserAndTheSecondDoesNot() async throws {
        let apple = try AppleProvider.strings()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try OAuth2Provider(configuration: try apple.configuration(), transport: transport)
        let user = Self.freshUser()

        let (first, firstResponse) = try await Self.signIn(provider, apple, user: user, transport: transport)
        let posted = try #require(firstResponse.user)
        #expect(posted.firstName == "Jane")
        #expect(posted.lastName == "Appleseed")
        let idToken = try #require(first.idToken)
        #expect(posted.email == idToken.email)
        #expect(idToken.issuer == apple.issuer)
        #expect(idToken.audience == [apple.clientID])
        #expect(idToken.nonce != nil)
        #expect(idToken.claims["email_verified"] == .string("true"))
        #expect(idToken.emailVerified == true)
        #expect(idToken.isPrivateEmail == true)
        #expect(first.tokenType == "Bearer")
        #expect(first.refreshToken != nil)
        #expect(!firstResponse.parameterNames.contains("iss"))

        let (second, secondResponse) = try await Self.signIn(provider, apple, user: user, transport: transport)
        #expect(secondResponse.user == nil)
        #expect(second.idToken?.subject == idToken.subject)
    }

    /// "Authenticating users with Sign in with Apple": newer tokens carry
    /// `email_verified` and `is_private_email` as JSON booleans.
    @Test(.enabled(if: AppleProvider.booleanIsConfigured, "needs OAUTH2_IT_APPLE_BOOLEAN_PROVIDER"))
    func booleanClaimsReadTheSameAsStringOnes() async throws {
        let apple = try AppleProvider.booleans()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try OAuth2Provider(configuration: try apple.configuration(), transport: transport)
        let (token, _) = try await Self.signIn(provider, apple, user: Self.freshUser(), transport: transport)
        let idToken = try #require(token.idToken)
        #expect(idToken.claims["email_verified"] == .bool(true))
        #expect(idToken.emailVerified == true)
        #expect(idToken.isPrivateEmail == true)
    }

    /// "Generate and validate tokens" (refresh with the client secret) and
    /// "Revoke tokens": after `revoke()`, the refresh token is refused.
    @Test func refreshThenRevokeEndsTheGrant() async throws {
        let apple = try AppleProvider.strings()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try OAuth2Provider(configuration: try apple.configuration(), transport: transport)
        let (token, _) = try await Self.signIn(provider, apple, user: Self.freshUser(), transport: transport)
        let client = provider.client(account: "apple-\(UUID().uuidString)")
        _ = try await client.adopt(token)
        let refreshed = try await client.refreshAccessToken()
        #expect(refreshed.accessToken != token.accessToken)
        #expect(refreshed.refreshToken == token.refreshToken)
        #expect(refreshed.idToken?.subject == token.idToken?.subject)

        try await client.revoke()
        let again = provider.client(account: "apple-revoked-\(UUID().uuidString)")
        _ = try await again.adopt(token)
        let error = await Self.error { _ = try await again.refreshAccessToken() }
        #expect(error?.code == .invalidGrant)
    }

    /// "Generate and validate tokens": one secret serves many requests; the
    /// library signs it once and sends it until it nears its end.
    @Test func oneSignedSecretServesTheTokenRefreshAndRevocationRequests() async throws {
        let apple = try AppleProvider.strings()
        let browser = CurlTransport()
        let recording = RecordingTransport()
        defer {
            Task {
                await browser.shutdown()
                await recording.inner.shutdown()
            }
        }
        let provider = try OAuth2Provider(configuration: try apple.configuration(), transport: recording)
        let (token, _) = try await Self.signIn(provider, apple, user: Self.freshUser(), transport: browser)
        let client = provider.client(account: "apple-\(UUID().uuidString)")
        _ = try await client.adopt(token)
        _ = try await client.refreshAccessToken()
        try await client.revoke()
        let secrets = recording.requests.compactMap { request -> String? in
            let form = request.body.map { String(decoding: $0, as: UTF8.self) } ?? ""
            return form.split(separator: "&").first { $0.hasPrefix("client_secret=") }.map(String.init)
        }
        // The code, the refresh, and the refresh and access token revocations: one secret.
        #expect(secrets.count == 4)
        #expect(Set(secrets).count == 1)
    }

    /// "Generate and validate tokens": a client secret with the wrong `kid`,
    /// `iss` (team id), key, `aud` or `sub` is `invalid_client`.
    @Test func aClientSecretAppleWouldRefuseIsInvalidClient() async throws {
        let apple = try AppleProvider.strings()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let otherKey = P256.Signing.PrivateKey().pemRepresentation
        let key = try JWTSigningKey.ecdsa(pem: try apple.privateKeyPEM(), keyID: apple.keyID)
        var wrongAudience = try apple.configuration()
        wrongAudience.signedClientSecret = try SignedClientSecret(
            issuer: apple.teamID, audience: "https://appleid.apple.com.example", key: key)
        var wrongSubject = try apple.configuration()
        wrongSubject.signedClientSecret = try SignedClientSecret(
            issuer: apple.teamID, audience: apple.issuer, key: key, subject: "com.example.other")
        let configurations = [
            try apple.configuration(keyID: "WRONGKEYID"),
            try apple.configuration(teamID: "WRONGTEAM1"),
            try apple.configuration(privateKeyPEM: otherKey),
            wrongAudience,
            wrongSubject,
        ]
        for configuration in configurations {
            let provider = try OAuth2Provider(configuration: configuration, transport: transport)
            let error = await Self.error { try await provider.revoke(Self.someToken(of: provider)) }
            #expect(error?.code == .invalidClient)
        }
        // The right secret, the same request: accepted (RFC 7009: an unknown token is no error).
        let provider = try OAuth2Provider(configuration: try apple.configuration(), transport: transport)
        try await provider.revoke(Self.someToken(of: provider))
    }

    /// "Generate and validate tokens": an expired secret, and one whose `exp`
    /// is more than 15777000 seconds (six months) after its `iat`, are refused.
    @Test func anExpiredOrOverSixMonthSecretIsInvalidClient() async throws {
        let apple = try AppleProvider.strings()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        // Made on a clock two hours behind: its hour ended an hour ago.
        let clock = ManualClock(Date().addingTimeInterval(-7200))
        let late = try OAuth2Provider(configuration: try apple.configuration(), transport: transport, clock: clock)
        let expired = await Self.error { try await late.revoke(Self.someToken(of: late)) }
        #expect(expired?.code == .invalidClient)

        let key = try JWTSigningKey.ecdsa(pem: try apple.privateKeyPEM(), keyID: apple.keyID)
        let now = Date().timeIntervalSince1970.rounded(.down)
        for (length, accepted) in [(15_777_000.0, true), (15_777_001.0, false)] {
            let secret = try JWT.sign(
                claims: [
                    "iss": .string(apple.teamID), "sub": .string(apple.clientID), "aud": .string(apple.issuer),
                    "iat": .number(now), "exp": .number(now + length),
                ], key: key, type: nil)
            var configuration = try apple.configuration()
            configuration.signedClientSecret = nil
            configuration.clientSecret = secret
            let provider = try OAuth2Provider(configuration: configuration, transport: transport)
            let error = await Self.error { try await provider.revoke(Self.someToken(of: provider)) }
            #expect(error?.code == (accepted ? nil : .invalidClient))
        }
    }

    /// "Incorporating Sign in with Apple into other platforms": a user who
    /// cancels comes back as `error=user_cancelled_authorize`, kept verbatim.
    @Test func aCancelledSignInIsTheProvidersError() async throws {
        let apple = try AppleProvider.strings()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try OAuth2Provider(configuration: try apple.configuration(), transport: transport)
        let pending = try await Self.start(provider, apple, user: Self.freshUser(), action: "cancel")
        let (_, body) = try await apple.browse(pending.url, transport: transport)
        let error = await Self.error {
            _ = try await provider.token(for: .authorizationCode(formPost: try FormPostResponse(body: body), pending: pending))
        }
        #expect(error?.code.rawValue == "user_cancelled_authorize")
    }

    /// The form post gets the redirect's checks: a posted response is used
    /// once, and one with another state is refused before any token request.
    @Test func aReplayedOrForeignPostIsStateMismatch() async throws {
        let apple = try AppleProvider.strings()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try OAuth2Provider(configuration: try apple.configuration(), transport: transport)
        let user = Self.freshUser()
        let pending = try await Self.start(provider, apple, user: user)
        let other = try await Self.start(provider, apple, user: user)
        let (_, body) = try await apple.browse(pending.url, transport: transport)
        let response = try FormPostResponse(body: body)
        let foreign = await Self.error { _ = try await provider.token(for: .authorizationCode(formPost: response, pending: other)) }
        #expect(foreign?.code == .stateMismatch)
        _ = try await provider.token(for: .authorizationCode(formPost: response, pending: pending))
        let replay = await Self.error { _ = try await provider.token(for: .authorizationCode(formPost: response, pending: pending)) }
        #expect(replay?.code == .stateMismatch)
    }
}
