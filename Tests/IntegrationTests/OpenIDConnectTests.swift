import Crypto
import Foundation
import OAuth2
import Testing
import _CryptoExtras

/// OpenID Connect against the local provider (django-oauth-toolkit with OIDC
/// on): discovery, a sign-in whose ID token the library verifies, userinfo,
/// refresh with a new ID token, RP-initiated logout, the CLI's side of it.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct OpenIDConnectTests {
    static let redirectURI = URL(string: "http://127.0.0.1/callback")!
    static let scopes = ["openid", "profile", "email", "read"]

    /// A provider made from the issuer's discovered configuration, as an app makes one.
    static func discoveredProvider(_ local: Provider, client name: String = "confidential", transport: CurlTransport) async throws
        -> OAuth2Provider
    {
        let client = try local.client(name)
        let configuration = try await OAuth2Configuration.discover(
            issuer: local.issuer,
            clientID: client.clientID,
            clientSecret: client.clientSecret.isEmpty ? nil : Secret(client.clientSecret),
            transport: transport
        )
        return try OAuth2Provider(configuration: configuration, transport: transport)
    }

    /// The code flow through the scripted browser; returns the verified token.
    static func signIn(_ provider: OAuth2Provider, at local: Provider, as username: String = "alice") async throws -> AccessToken {
        let pending = try await provider.authorizationURL(redirectURI: redirectURI, scopes: scopes)
        let redirect = try await local.browse(pending.url.absoluteString, username: username)
        return try await provider.token(for: .authorizationCode(redirect: redirect, pending: pending))
    }

    /// The `kid` of a compact JWS's header.
    static func keyID(of jws: Secret?) throws -> String? {
        let header = try #require(jws?.value.split(separator: ".").first)
        var text = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        let object = try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: text))) as? [String: Any]
        return object?["kid"] as? String
    }

    @Test func discoveryMakesAnOpenIDConfigurationHoldingOnlyPublicKeyAlgorithms() async throws {
        let local = try Provider.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.discoveredProvider(local, transport: transport)
        let openID = try #require(provider.configuration.openID)
        #expect(provider.configuration.issuer == local.issuer)
        #expect(openID.jwksURI.absoluteString == local.endpoints.jwks)
        #expect(openID.userinfoEndpoint?.absoluteString == local.endpoints.userinfo)
        #expect(openID.endSessionEndpoint?.absoluteString == local.endpoints.endSession)
        // DOT lists HS256 as well; an ID token is never verified with a shared secret.
        #expect(openID.signingAlgorithms == [.rs256])
        #expect(provider.configuration.requiresIssuerInRedirect)
    }

    @Test(arguments: ["confidential", "public"])
    func signInVerifiesTheIDTokenAndUserinfoRefreshAndLogoutFollow(client name: String) async throws {
        let local = try Provider.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.discoveredProvider(local, client: name, transport: transport)
        let token = try await Self.signIn(provider, at: local)
        let idToken = try #require(token.idToken)
        #expect(idToken.issuer == local.issuer)
        #expect(idToken.audience == [try local.client(name).clientID])
        #expect(idToken.email == local.users["alice"]?.email)
        #expect(idToken.name == local.users["alice"]?.name)
        #expect(idToken.nonce != nil)

        let client = provider.client(account: "alice-\(name)")
        _ = try await client.adopt(token)
        let info = try await client.userInfo()
        #expect(info.subject == idToken.subject)
        #expect(info.email == idToken.email)

        // DOT sends a new ID token on refresh: verified, same user, kept.
        let refreshed = try await client.refreshAccessToken()
        #expect(refreshed.idToken?.subject == idToken.subject)
        #expect(refreshed.rawIDToken != token.rawIDToken)
        #expect(try await client.idToken()?.issuedAt ?? .distantPast >= idToken.issuedAt)

        let logout = try #require(try await client.endSessionURL(postLogoutRedirectURI: Self.redirectURI, state: "bye-\(name)"))
        #expect(logout.absoluteString.hasPrefix(local.endpoints.endSession + "?id_token_hint="))
        try await client.logout()
        let landed = try await local.browseLogout(logout.absoluteString)
        #expect(landed == "\(Self.redirectURI.absoluteString)?state=bye-\(name)")
    }

    @Test func twoUsersHaveTwoSubjects() async throws {
        let local = try Provider.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.discoveredProvider(local, transport: transport)
        let alice = try #require(try await Self.signIn(provider, at: local, as: "alice").idToken)
        let bob = try #require(try await Self.signIn(provider, at: local, as: "bob").idToken)
        #expect(alice.subject != bob.subject)
        #expect(bob.email == local.users["bob"]?.email)
    }

    // MARK: - The CLI

    @Test func theCLISignsInWithAVerifiedIDTokenAndShowsItsClaimsNeverTheToken() async throws {
        let local = try Provider.main()
        let cli = try CLI()
        let options = try local.options(client: "confidential", for: cli, endpoints: false) + ["--issuer", local.issuer]
        let (result, url, _) = try await local.authorize(with: cli, options: options + ["--scope", Self.scopes.joined(separator: " ")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(url.contains("nonce="))
        #expect(result.stderr.contains("ID token verified"))

        let token = try await cli.run(["token", "--format", "json"] + options)
        #expect(token.status == 0, "\(token.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(token.stdout.utf8)) as? [String: Any])
        let claims = try #require(json["id_token"] as? [String: Any])
        #expect(claims["iss"] as? String == local.issuer)
        #expect(claims["email"] as? String == local.users["alice"]?.email)
        #expect(claims["aud"] as? [String] == [try local.client("confidential").clientID])
        let stored = try #require(try await cli.storedToken())
        let raw = try #require(stored.rawIDToken?.value)
        for output in [token.stdout, token.stderr, result.stdout, result.stderr] {
            #expect(!output.contains(raw))
            #expect(!output.contains(String(raw.split(separator: ".")[1])))
        }

        let userinfo = try await cli.run(["userinfo"] + options)
        #expect(userinfo.status == 0, "\(userinfo.stderr)")
        let info = try #require(try JSONSerialization.jsonObject(with: Data(userinfo.stdout.utf8)) as? [String: Any])
        #expect(info["sub"] as? String == claims["sub"] as? String)

        let refresh = try await cli.run(["refresh"] + options)
        #expect(refresh.status == 0, "\(refresh.stderr)")
        #expect(try await cli.storedToken()?.rawIDToken?.value != raw)

        let logout = try await cli.run(
            ["logout", "--post-logout-redirect-uri", Self.redirectURI.absoluteString, "--state", "cli-bye"] + options)
        #expect(logout.status == 0, "\(logout.stderr)")
        let endSession = logout.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(endSession.hasPrefix(local.endpoints.endSession + "?id_token_hint="))
        #expect(try await cli.storedToken() == nil)
        #expect(try await local.browseLogout(endSession) == "\(Self.redirectURI.absoluteString)?state=cli-bye")
    }

    @Test func withoutTheOpenIDScopeNoNonceIsSentAndNoIDTokenIsRequired() async throws {
        let local = try Provider.main()
        let cli = try CLI()
        let options = try local.options(client: "confidential", for: cli, endpoints: false) + ["--issuer", local.issuer]
        let (result, url, _) = try await local.authorize(with: cli, options: options + ["--scope", "read"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!url.contains("nonce="))
        #expect(try await cli.storedToken()?.idToken == nil)
    }
}

/// What changes the provider for everyone: a signing key rotation. On a
/// provider of its own (`OAUTH2_IT_OIDC_PROVIDER`).
@Suite(
    .serialized,
    .enabled(if: Provider.oidcIsConfigured, "needs the OpenID tests' own provider: `make test` starts it and sets OAUTH2_IT_OIDC_PROVIDER"))
struct OpenIDKeyRotationTests {
    static func rotate(_ local: Provider, keepOld: Bool, transport: CurlTransport) async throws -> (kid: String, old: String) {
        let request = HTTPTransportRequest(
            method: .post, url: try #require(URL(string: local.endpoints.testRotateSigningKey)),
            headers: [.contentType: "application/x-www-form-urlencoded"], body: Data("keep_old=\(keepOld ? 1 : 0)".utf8)
        )
        let response = try await transport.send(request)
        #expect(response.status == 200)
        let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
        return (try #require(object["kid"] as? String), try #require(object["old_kid"] as? String))
    }

    @Test func signInsKeepWorkingAcrossKeyRotationsWithoutARestart() async throws {
        let local = try Provider.oidc()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let client = try local.client("confidential")
        var configuration = try await OAuth2Configuration.discover(
            issuer: local.issuer, clientID: client.clientID, clientSecret: Secret(client.clientSecret), transport: transport
        )
        // The rate limit on refetching the key set is the unit tests' subject; here it would only make the test wait.
        configuration.openID?.keySetRefetchInterval = .zero
        let provider = try OAuth2Provider(configuration: configuration, transport: transport)

        let first = try await OpenIDConnectTests.signIn(provider, at: local)
        let firstKid = try OpenIDConnectTests.keyID(of: first.rawIDToken)

        // A new key published, the old one removed.
        let (newKid, oldKid) = try await Self.rotate(local, keepOld: false, transport: transport)
        #expect(oldKid == firstKid)
        let second = try await OpenIDConnectTests.signIn(provider, at: local)
        #expect(try OpenIDConnectTests.keyID(of: second.rawIDToken) == newKid)
        #expect(second.idToken?.subject == first.idToken?.subject)

        // And once more with the old key still published for a while.
        let (newerKid, _) = try await Self.rotate(local, keepOld: true, transport: transport)
        let third = try await OpenIDConnectTests.signIn(provider, at: local)
        #expect(try OpenIDConnectTests.keyID(of: third.rawIDToken) == newerKid)
    }

    /// The audit's hole: a refresh whose ID token names a key the client
    /// cannot fetch (the key set down right after a rotation) used to drop
    /// the whole response, rotated refresh token included; with reuse
    /// protection (this provider has it) the next refresh then spent the old
    /// refresh token and the provider revoked the grant.
    @Test func aRefreshWhileTheKeySetIsDownKeepsTheRotatedRefreshTokenAndTheGrant() async throws {
        let local = try Provider.oidc()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let cli = try CLI()
        let options = try local.options(client: "confidential", for: cli, endpoints: false) + ["--issuer", local.issuer]
        let (result, _, _) = try await local.authorize(with: cli, options: options + ["--scope", "openid email read"])
        #expect(result.status == 0, "\(result.stderr)")
        let signedIn = try #require(try await cli.storedToken())
        let subject = try #require(signedIn.idToken?.subject)
        let liveGrants = try await local.liveRefreshTokens(client: "confidential")
        let requestsBefore = try await local.tokenRequests(client: "confidential").requests.count

        try await local.setJWKSOutage(status: 503)
        do {
            _ = try await Self.rotate(local, keepOld: false, transport: transport)
            _ = try await cli.expireStoredToken(at: local)
            let first = try await cli.run(["call", local.endpoints.apiMe] + options)
            #expect(first.status == 0, "\(first.stderr)")
            let held = try #require(try await cli.storedToken())
            #expect(held.refreshToken != nil && held.refreshToken != signedIn.refreshToken)
            #expect(held.unverifiedIDToken?.isRefused == false)
            #expect(held.idToken?.subject == subject)
            try await local.setJWKSOutage(status: 0)
        } catch {
            try await local.setJWKSOutage(status: 0)
            throw error
        }

        // The keys are back: the next refresh spends the rotated refresh token and verifies its own ID token.
        _ = try await cli.expireStoredToken(at: local)
        let second = try await cli.run(["call", local.endpoints.apiMe] + options)
        #expect(second.status == 0, "\(second.stderr)")
        let after = try #require(try await cli.storedToken())
        #expect(after.unverifiedIDToken == nil)
        #expect(after.idToken?.subject == subject)
        let refreshes = try await local.tokenRequests(client: "confidential").requests.dropFirst(requestsBefore)
        #expect(refreshes.map(\.grantType) == ["refresh_token", "refresh_token"])
        #expect(refreshes.allSatisfy { $0.status == 200 })
        #expect(try await local.liveRefreshTokens(client: "confidential") == liveGrants)
    }

    @Test func theCLIVerifiesAfterARotationToo() async throws {
        let local = try Provider.oidc()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        _ = try await Self.rotate(local, keepOld: false, transport: transport)
        let cli = try CLI()
        let options = try local.options(client: "public", for: cli, endpoints: false) + ["--issuer", local.issuer]
        let (result, _, _) = try await local.authorize(with: cli, options: options + ["--scope", "openid email"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await cli.storedToken()?.idToken?.email == local.users["alice"]?.email)
    }
}

/// RFC 7523 client authentication and the JWT-bearer grant, accepted by a
/// token endpoint that verifies the assertion with the client's public key
/// (the provider's /test/jwt-client-token; DOT itself has neither).
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct JWTClientAuthenticationTests {
    /// Registers `key`'s public JWK for `clientID` at the provider.
    static func register(_ key: JWTSigningKey, clientID: String, at local: Provider, transport: CurlTransport) async throws {
        let jwk = try #require(key.publicJWK)
        let body = try JSONEncoder().encode(JSONValue.object(["client_id": .string(clientID), "jwk": .object(jwk)]))
        let request = HTTPTransportRequest(
            method: .post, url: try #require(URL(string: local.endpoints.testClientKeys)),
            headers: [.contentType: "application/json"], body: body
        )
        let response = try await transport.send(request)
        #expect(response.status == 200, "\(response.bodyText)")
    }

    static func provider(
        _ local: Provider, clientID: String, secret: Secret? = nil,
        authentication: ClientAuthentication, key: JWTSigningKey? = nil, transport: CurlTransport
    ) throws -> OAuth2Provider {
        let configuration = try OAuth2Configuration(
            clientID: clientID,
            clientSecret: secret,
            tokenEndpoint: try #require(URL(string: local.endpoints.testJWTClientToken)),
            clientAuthentication: authentication,
            clientAssertionKey: key
        )
        return try OAuth2Provider(configuration: configuration, transport: transport)
    }

    @Test func privateKeyJWTWithRSAAndECKeysIsAccepted() async throws {
        let local = try Provider.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let keys = [
            try JWTSigningKey.rsa(pem: try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation, keyID: "rsa-1"),
            try JWTSigningKey.rsa(
                pem: try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation, algorithm: .ps256, keyID: "pss-1"),
            try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "ec-1"),
        ]
        for key in keys {
            let clientID = "jwt-client-\(UUID().uuidString)"
            try await Self.register(key, clientID: clientID, at: local, transport: transport)
            let provider = try Self.provider(local, clientID: clientID, authentication: .privateKeyJWT, key: key, transport: transport)
            let token = try await provider.token(for: .clientCredentials(scopes: ["read"]))
            #expect(!token.accessToken.isEmpty, "\(key.algorithm)")
            // Twice: a fresh jti each time, or the endpoint would call it a replay.
            _ = try await provider.token(for: .clientCredentials(scopes: ["read"]))
        }
    }

    @Test func aKeyTheProviderDoesNotKnowForTheClientIsRefused() async throws {
        let local = try Provider.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let registered = try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "ec-1")
        let other = try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "ec-1")
        let clientID = "jwt-client-\(UUID().uuidString)"
        try await Self.register(registered, clientID: clientID, at: local, transport: transport)
        let provider = try Self.provider(local, clientID: clientID, authentication: .privateKeyJWT, key: other, transport: transport)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await provider.token(for: .clientCredentials(scopes: ["read"])) }
        #expect(error?.code == .invalidClient)
    }

    @Test func clientSecretJWTIsAccepted() async throws {
        let local = try Provider.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let client = try local.client("confidential")
        let provider = try Self.provider(
            local, clientID: client.clientID, secret: Secret(client.clientSecret), authentication: .clientSecretJWT, transport: transport)
        let token = try await provider.token(for: .clientCredentials(scopes: ["read"]))
        #expect(!token.accessToken.isEmpty)
        let wrong = try Self.provider(
            local, clientID: client.clientID, secret: Secret(client.clientSecret + "-not"), authentication: .clientSecretJWT,
            transport: transport)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await wrong.token(for: .clientCredentials(scopes: ["read"])) }
        #expect(error?.code == .invalidClient)
    }

    @Test func aJWTBearerGrantTheClientBuildsItselfIsAccepted() async throws {
        let local = try Provider.main()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let key = try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "svc-1")
        let clientID = "jwt-service-\(UUID().uuidString)"
        try await Self.register(key, clientID: clientID, at: local, transport: transport)
        let endpoint = local.endpoints.testJWTClientToken
        let configuration = try OAuth2Configuration(
            clientID: clientID,
            tokenEndpoint: try #require(URL(string: endpoint)),
            assertionGrant: .jwtBearer {
                try JWTAssertion.make(issuer: clientID, subject: "alice", audience: endpoint, key: key)
            }
        )
        let provider = try OAuth2Provider(configuration: configuration, transport: transport)
        let client = provider.client(account: "service")
        let token = try await client.authenticate(.assertion(scopes: ["read"]))
        #expect(!token.accessToken.isEmpty)
    }
}
