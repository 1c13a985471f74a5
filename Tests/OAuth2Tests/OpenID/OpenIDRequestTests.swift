import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// The parameters OpenID Connect and RFC 8707 add to requests, the
/// end-session URL, and userinfo.
@Suite struct OpenIDRequestTests {
    static let jwks = URL(string: "https://id.example.com/jwks")!

    static func configuration(
        openID: Bool = true,
        resources: [URL] = [],
        audience: String? = nil,
        additionalTokenParameters: [(String, String)] = [],
        userinfo: URL? = URL(string: "https://id.example.com/userinfo"),
        endSession: URL? = URL(string: "https://id.example.com/logout?tenant=1")
    ) throws(OAuth2Error) -> OAuth2Configuration {
        try OAuth2Configuration(
            clientID: "client-id",
            clientSecret: Secret("client-secret-value"),
            authorizationEndpoint: FlowFixtures.authorizationEndpoint,
            tokenEndpoint: FlowFixtures.tokenEndpoint,
            deviceAuthorizationEndpoint: FlowFixtures.deviceEndpoint,
            issuer: "https://id.example.com",
            openID: openID ? OpenIDSettings(jwksURI: jwks, userinfoEndpoint: userinfo, endSessionEndpoint: endSession) : nil,
            resources: resources,
            audience: audience,
            additionalTokenParameters: additionalTokenParameters
        )
    }

    private func pairs(of url: URL) throws -> [(String, String)] {
        let query = try #require(url.absoluteString.split(separator: "?", maxSplits: 1).last)
        return try FormURLEncoding.decode(query)
    }

    private func pairs(ofBody request: HTTPTransportRequest) throws -> [(String, String)] {
        try FormURLEncoding.decode(String(decoding: try #require(request.body), as: UTF8.self)[...])
    }

    @Test func anOpenIDRequestCarriesAFreshNonceThatThePendingAuthorizationKeeps() throws {
        let configuration = try Self.configuration()
        let first = try AuthorizationRequestBuilder.make(
            configuration: configuration, redirectURI: FlowFixtures.redirectURI, scopes: ["openid", "email"], additionalParameters: [],
            now: Date())
        let second = try AuthorizationRequestBuilder.make(
            configuration: configuration, redirectURI: FlowFixtures.redirectURI, scopes: ["openid", "email"], additionalParameters: [],
            now: Date())
        let nonce = try #require(first.nonce)
        #expect(try pairs(of: first.url).filter { $0.0 == "nonce" }.map(\.1) == [nonce.value])
        #expect(nonce.value.utf8.count >= 43)
        #expect(first.nonce != second.nonce)
        #expect(!String(describing: first).contains(nonce.value))
        var dumped = ""
        dump(first, to: &dumped)
        #expect(!dumped.contains(nonce.value))
        // It survives the session round trip a server makes.
        let decoded = try JSONDecoder().decode(PendingAuthorization.self, from: JSONEncoder().encode(first))
        #expect(decoded.nonce == nonce)
    }

    @Test func noNonceWithoutOpenIDOrWithoutTheOpenIDScope() throws {
        let plain = try AuthorizationRequestBuilder.make(
            configuration: try Self.configuration(openID: false), redirectURI: FlowFixtures.redirectURI, scopes: ["openid"],
            additionalParameters: [], now: Date())
        #expect(plain.nonce == nil)
        let noScope = try AuthorizationRequestBuilder.make(
            configuration: try Self.configuration(), redirectURI: FlowFixtures.redirectURI, scopes: ["read"], additionalParameters: [],
            now: Date())
        #expect(noScope.nonce == nil)
        #expect(try !pairs(of: noScope.url).contains { $0.0 == "nonce" })
    }

    @Test func anAppCannotReplaceTheNonce() throws {
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try AuthorizationRequestBuilder.make(
                configuration: try Self.configuration(), redirectURI: FlowFixtures.redirectURI, scopes: ["openid"],
                additionalParameters: [("nonce", "fixed")], now: Date())
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func resourcesAndAudienceGoOnTheAuthorizationAndEveryTokenRequest() throws {
        let resources = [URL(string: "https://api.example.com/")!, URL(string: "urn:example:billing")!]
        let configuration = try Self.configuration(
            resources: resources, audience: "https://api.example.com", additionalTokenParameters: [("tenant", "a"), ("tenant", "b")])
        let pending = try AuthorizationRequestBuilder.make(
            configuration: configuration, redirectURI: FlowFixtures.redirectURI, scopes: ["read"], additionalParameters: [], now: Date())
        let query = try pairs(of: pending.url)
        #expect(query.filter { $0.0 == "resource" }.map(\.1) == ["https://api.example.com/", "urn:example:billing"])
        #expect(query.filter { $0.0 == "audience" }.map(\.1) == ["https://api.example.com"])

        let grants: [Grant] = [
            .authorizationCode(code: Secret("c"), redirectURI: FlowFixtures.redirectURI, codeVerifier: Secret("v")),
            .refreshToken(Secret("r"), scopes: []),
            .clientCredentials(scopes: ["read"]),
        ]
        for grant in grants {
            let body = try pairs(ofBody: try TokenRequestBuilder.tokenRequest(for: grant, configuration: configuration))
            #expect(body.filter { $0.0 == "resource" }.map(\.1) == ["https://api.example.com/", "urn:example:billing"], "\(grant.name)")
            #expect(body.filter { $0.0 == "audience" }.map(\.1) == ["https://api.example.com"], "\(grant.name)")
            #expect(body.filter { $0.0 == "tenant" }.map(\.1) == ["a", "b"], "\(grant.name)")
        }
        let device = try pairs(ofBody: try TokenRequestBuilder.deviceAuthorizationRequest(scopes: [], configuration: configuration))
        #expect(device.filter { $0.0 == "resource" }.count == 2)
    }

    @Test func badResourcesAndReservedTokenParametersAreRefused() {
        for resource in ["https://api.example.com/#frag", "relative/path"] {
            let error = FlowFixtures.error { () throws(OAuth2Error) in try Self.configuration(resources: [URL(string: resource)!]) }
            #expect(error?.code == .invalidConfiguration, "\(resource)")
        }
        for name in ["grant_type", "client_secret", "scope", "resource", "client_assertion"] {
            let error = FlowFixtures.error { () throws(OAuth2Error) in try Self.configuration(additionalTokenParameters: [(name, "x")]) }
            #expect(error?.code == .invalidConfiguration, "\(name)")
        }
    }

    @Test func jwtClientAuthenticationNeedsItsKey() {
        let short = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(
                clientID: "c", clientSecret: Secret("short"), tokenEndpoint: FlowFixtures.tokenEndpoint,
                clientAuthentication: .clientSecretJWT)
        }
        #expect(short?.code == .invalidConfiguration)
        let noKey = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(clientID: "c", tokenEndpoint: FlowFixtures.tokenEndpoint, clientAuthentication: .privateKeyJWT)
        }
        #expect(noKey?.code == .invalidConfiguration)
        let hmacAsPrivateKey = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(
                clientID: "c", tokenEndpoint: FlowFixtures.tokenEndpoint, clientAuthentication: .privateKeyJWT,
                clientAssertionKey: try JWTSigningKey.hmac(Secret(String(repeating: "k", count: 32)))
            )
        }
        #expect(hmacAsPrivateKey?.code == .invalidConfiguration)
    }

    @Test func openIDNeedsTheIssuerAndAnHTTPSKeySet() {
        let noIssuer = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(clientID: "c", tokenEndpoint: FlowFixtures.tokenEndpoint, openID: OpenIDSettings(jwksURI: Self.jwks))
        }
        #expect(noIssuer?.code == .invalidConfiguration)
        let insecure = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(
                clientID: "c", tokenEndpoint: FlowFixtures.tokenEndpoint, issuer: "https://id.example.com",
                openID: OpenIDSettings(jwksURI: URL(string: "http://id.example.com/jwks")!))
        }
        #expect(insecure?.code == .insecureEndpoint)
        let hmacOnly = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(
                clientID: "c", tokenEndpoint: FlowFixtures.tokenEndpoint, issuer: "https://id.example.com",
                openID: OpenIDSettings(jwksURI: Self.jwks, signingAlgorithms: [.hs256]))
        }
        #expect(hmacOnly?.code == .invalidConfiguration)
    }

    @Test func theEndSessionURLCarriesTheHintTheClientAndTheState() async throws {
        let harness = try ClientHarness(configuration: try Self.configuration())
        let client = harness.provider.client(account: "alice")
        var token = Fixture.token(expiresAt: harness.clock.now().addingTimeInterval(3600))
        token.extraFields["id_token"] = .string("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln")
        _ = try await client.adopt(token)
        let url = try #require(try await client.endSessionURL(postLogoutRedirectURI: URL(string: "https://app.example/bye"), state: "s t"))
        #expect(url.absoluteString.hasPrefix("https://id.example.com/logout?tenant=1&"))
        let query = try pairs(of: url).filter { $0.0 != "tenant" }
        #expect(query.map(\.0) == ["id_token_hint", "client_id", "post_logout_redirect_uri", "state"])
        #expect(query.map(\.1) == ["eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln", "client-id", "https://app.example/bye", "s t"])

        let without = try ClientHarness(configuration: try Self.configuration(endSession: nil))
        #expect(try await without.provider.client().endSessionURL() == nil)
    }

    @Test func userinfoMustBeAboutTheSignedInUser() async throws {
        let harness = try ClientHarness(configuration: try Self.configuration())
        let client = harness.provider.client(account: "alice")
        var token = Fixture.token(expiresAt: harness.clock.now().addingTimeInterval(3600))
        token.idToken = try IDToken(
            claims: IDTokenClaimsTests.claims(["iss": .string("https://id.example.com"), "aud": .string("client-id")]))
        _ = try await client.adopt(token)

        harness.transport.enqueue(json: #"{"sub": "user-1", "email": "alice@example.com", "name": "Alice"}"#)
        let info = try await client.userInfo()
        #expect(info.subject == "user-1")
        #expect(info.email == "alice@example.com")
        let request = try #require(harness.transport.requests.last)
        #expect(request.url.absoluteString == "https://id.example.com/userinfo")
        #expect(request.headers[.authorization] == "Bearer \(Fixture.accessToken)")
        #expect(request.headers[.accept] == "application/json, application/jwt")

        harness.transport.enqueue(json: #"{"sub": "user-2"}"#)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await client.userInfo() }
        #expect(error?.code == .subjectMismatch)

        harness.transport.enqueue(json: #"{"email": "x@example.com"}"#)
        let noSubject = await #expect(throws: OAuth2Error.self) { _ = try await client.userInfo() }
        #expect(noSubject?.code == .invalidTokenResponse)

        // A signed answer is read only once verified (UserInfoTests): this one is no JWS at all.
        harness.transport.enqueue(HTTPTransportResponse(status: 200, headers: [.contentType: "application/jwt"], body: Data("a.b.c".utf8)))
        let jwt = await #expect(throws: OAuth2Error.self) { _ = try await client.userInfo() }
        #expect(jwt?.code == .invalidJWT)
    }
}
