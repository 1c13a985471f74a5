import Crypto
import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// Pushed authorization requests (RFC 9126) and signed request objects
/// (RFC 9101) as the provider makes them when an authorization starts.
@Suite struct OAuth2ProviderAuthorizationTests {
    static let parURL = URL(string: "https://idp.example/oauth/par")!
    static let issuer = "https://idp.example"
    static let requestURI = "urn:ietf:params:oauth:request_uri:bwc4JK-ESC0w8acc191e-Y1LTC2"

    static func configuration(
        clientAuthentication: ClientAuthentication? = nil,
        secret: String? = Fixture.clientSecret,
        key: JWTSigningKey? = nil,
        pushed: PushedAuthorization = .always,
        required: Bool = false
    ) throws -> OAuth2Configuration {
        var configuration = try OAuth2Configuration(
            clientID: "client-1",
            clientSecret: secret.map(Secret.init),
            authorizationEndpoint: Fixture.authorizeURL,
            tokenEndpoint: Fixture.tokenURL,
            defaultScopes: ["read"],
            clientAuthentication: clientAuthentication,
            issuer: issuer,
            clientAssertionKey: key
        )
        configuration.pushedAuthorizationRequestEndpoint = parURL
        configuration.pushedAuthorization = pushed
        configuration.requiresPushedAuthorizationRequests = required
        return configuration
    }

    static func ecKey() throws -> JWTSigningKey {
        try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "client-key")
    }

    static func query(_ url: URL) throws -> [(String, String)] {
        try #require(URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems).map { ($0.name, $0.value ?? "") }
    }

    func enqueuePushAnswer(_ harness: ClientHarness, expiresIn: Int = 60) {
        harness.transport.enqueue(
            json: #"{"request_uri":"\#(Self.requestURI)","expires_in":\#(expiresIn)}"#, status: 201, for: Self.parURL)
    }

    // MARK: - PAR

    @Test func pushesTheParametersAndSendsOnlyClientIDAndRequestURIToTheBrowser() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        enqueuePushAnswer(harness)
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI, scopes: ["read", "write"])

        let pushes = harness.transport.requests(for: Self.parURL)
        #expect(pushes.count == 1)
        let push = try #require(pushes.first)
        #expect(push.method == .post)
        #expect(push.redirects == .never)
        #expect(
            push.headers[.authorization]
                == TokenRequestBuilder.basicAuthorization(clientID: "client-1", secret: Secret(Fixture.clientSecret)))
        let fields = Fixture.formFields(push.body)
        #expect(fields["response_type"] == "code")
        #expect(fields["client_id"] == "client-1")
        #expect(fields["redirect_uri"] == Fixture.redirectURI.absoluteString)
        #expect(fields["scope"] == "read write")
        #expect(fields["state"] == pending.state)
        #expect(fields["code_challenge"] == PKCE.challenge(for: pending.codeVerifier))
        #expect(fields["code_challenge_method"] == "S256")
        #expect(fields["client_secret"] == nil)

        let query = try Self.query(pending.url)
        #expect(query.map(\.0) == ["client_id", "request_uri"])
        #expect(query.map(\.1) == ["client-1", Self.requestURI])
        #expect(pending.url.absoluteString.hasPrefix(Fixture.authorizeURL.absoluteString + "?"))
        #expect(pending.pushedRequestExpiresAt == harness.clock.now().addingTimeInterval(60))

        // The redirect is checked against what was pushed, and the code exchanged as ever.
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let redirect = "\(Fixture.redirectURI.absoluteString)?code=c-1&state=\(pending.state)"
        let token = try await client.authenticate(.authorizationCode(redirect: redirect))
        #expect(token.accessToken.value == Fixture.accessToken)
        #expect(Fixture.formFields(harness.tokenRequests.first?.body)["code_verifier"] == pending.codeVerifier.value)
    }

    @Test func thePushAuthenticatesWithClientSecretPost() async throws {
        let harness = try ClientHarness(configuration: Self.configuration(clientAuthentication: .clientSecretPost))
        enqueuePushAnswer(harness)
        _ = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        #expect(push.headers[.authorization] == nil)
        let body = String(decoding: push.body ?? Data(), as: UTF8.self)
        #expect(body.components(separatedBy: "client_id=").count == 2)
        #expect(Fixture.formFields(push.body)["client_secret"] == Fixture.clientSecret)
    }

    @Test func thePushOfAPublicClientCarriesItsIDAndNoCredential() async throws {
        let harness = try ClientHarness(configuration: Self.configuration(secret: nil))
        enqueuePushAnswer(harness)
        _ = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        #expect(push.headers[.authorization] == nil)
        let fields = Fixture.formFields(push.body)
        #expect(fields["client_id"] == "client-1")
        #expect(fields["client_secret"] == nil)
        #expect(fields["client_assertion"] == nil)
    }

    @Test func thePushAuthenticatesWithPrivateKeyJWT() async throws {
        let key = try Self.ecKey()
        let harness = try ClientHarness(configuration: Self.configuration(clientAuthentication: .privateKeyJWT, secret: nil, key: key))
        enqueuePushAnswer(harness)
        _ = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        #expect(push.headers[.authorization] == nil)
        let fields = Fixture.formFields(push.body)
        #expect(fields["client_assertion_type"] == TokenRequestBuilder.clientAssertionType)
        let assertion = try CompactJWS(try #require(fields["client_assertion"]))
        _ = try assertion.verify(with: JOSEFixtures.keySet(of: key), allowedAlgorithms: [.es256])
        let claims = try assertion.payloadObject()
        #expect(claims["iss"] == .string("client-1"))
        #expect(claims["sub"] == .string("client-1"))
        // RFC 9126 §2: the PAR endpoint is one of the audiences the server must accept, and the one all do.
        #expect(claims["aud"] == .string(Self.parURL.absoluteString))
        #expect(String(decoding: push.body ?? Data(), as: UTF8.self).components(separatedBy: "client_id=").count == 2)
    }

    @Test func thePushAuthenticatesWithClientSecretJWT() async throws {
        let secret = String(repeating: "k", count: 40)
        let harness = try ClientHarness(configuration: Self.configuration(clientAuthentication: .clientSecretJWT, secret: secret))
        enqueuePushAnswer(harness)
        _ = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        let fields = Fixture.formFields(push.body)
        #expect(fields["client_secret"] == nil)
        let assertion = try CompactJWS(try #require(fields["client_assertion"]))
        #expect(assertion.algorithm == .hs256)
        let mac = HMAC<SHA256>.authenticationCode(for: assertion.signingInput, using: SymmetricKey(data: Data(secret.utf8)))
        #expect(Array(mac) == assertion.signature)
    }

    @Test func automaticPushesOnlyWhenTheProviderRequiresIt() async throws {
        let notRequired = try ClientHarness(configuration: Self.configuration(pushed: .automatic, required: false))
        let plain = try await notRequired.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        #expect(notRequired.transport.requests.isEmpty)
        #expect(plain.pushedRequestExpiresAt == nil)
        #expect(try Self.query(plain.url).contains { $0.0 == "code_challenge" })

        let required = try ClientHarness(configuration: Self.configuration(pushed: .automatic, required: true))
        enqueuePushAnswer(required)
        let pushed = try await required.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        #expect(required.transport.requests(for: Self.parURL).count == 1)
        #expect(try Self.query(pushed.url).map(\.0) == ["client_id", "request_uri"])
    }

    @Test func neverDoesNotPushAndIsRefusedWhenRequired() async throws {
        let harness = try ClientHarness(configuration: Self.configuration(pushed: .never))
        _ = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        #expect(harness.transport.requests.isEmpty)
        #expect(throws: OAuth2Error.self) { try ClientHarness(configuration: Self.configuration(pushed: .never, required: true)) }
    }

    @Test func aRefusedOrMalformedPushFailsTheStart() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        harness.transport.enqueue(json: #"{"error":"invalid_request","error_description":"bad scope"}"#, status: 400, for: Self.parURL)
        let refused = await oauth2Error { _ = try await harness.client().authorizationURL(redirectURI: Fixture.redirectURI) }
        #expect(refused?.code == .invalidRequest)

        harness.transport.enqueue(json: #"{"expires_in":60}"#, status: 201, for: Self.parURL)
        let malformed = await oauth2Error { _ = try await harness.client().authorizationURL(redirectURI: Fixture.redirectURI) }
        #expect(malformed?.code == .invalidPushedAuthorizationResponse)

        // Nothing was started: there is no pending authorization for a redirect to finish.
        let redirect = "\(Fixture.redirectURI.absoluteString)?code=c-1&state=x"
        #expect(await oauth2Error { _ = try await harness.client().authenticate(.authorizationCode(redirect: redirect)) } != nil)
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func thePushedPendingAuthorizationRoundTripsThroughJSON() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        enqueuePushAnswer(harness, expiresIn: 90)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let decoded = try JSONDecoder().decode(PendingAuthorization.self, from: JSONEncoder().encode(pending))
        #expect(decoded == pending)
        #expect(decoded.pushedRequestExpiresAt == harness.clock.now().addingTimeInterval(90))
        #expect(decoded.url == pending.url)
    }

    @Test func aSessionKeptBeforePushedRequestsStillDecodes() throws {
        let pending = PendingAuthorization(
            url: Fixture.authorizeURL, state: "s", codeVerifier: Secret("v"), redirectURI: Fixture.redirectURI, scopes: ["read"],
            expectedIssuer: nil, requiresIssuer: false, createdAt: Date(timeIntervalSince1970: 1_800_000_000))
        var object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(pending)) as? [String: Any])
        object["pushedRequestExpiresAt"] = nil
        let old = try JSONSerialization.data(withJSONObject: object)
        let decoded = try JSONDecoder().decode(PendingAuthorization.self, from: old)
        #expect(decoded == pending)
        #expect(decoded.pushedRequestExpiresAt == nil)
    }

    @Test func theExpiryIsKnownAndARedirectAfterItIsStillHandled() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        enqueuePushAnswer(harness, expiresIn: 60)
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        #expect(!pending.isPushedRequestExpired(at: harness.clock.now().addingTimeInterval(59)))
        #expect(pending.isPushedRequestExpired(at: harness.clock.now().addingTimeInterval(60)))

        // The provider refused the stale request_uri; its error reaches the app as it is.
        harness.clock.advance(by: .seconds(120))
        let redirect = "\(Fixture.redirectURI.absoluteString)?error=invalid_request_uri&state=\(pending.state)"
        let error = await oauth2Error { _ = try await client.authenticate(.authorizationCode(redirect: redirect, pending: pending)) }
        #expect(error?.code == "invalid_request_uri")
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func aRequestThatWasNotPushedNeverExpires() throws {
        let pending = PendingAuthorization(
            url: Fixture.authorizeURL, state: "s", codeVerifier: Secret("v"), redirectURI: Fixture.redirectURI, scopes: [],
            expectedIssuer: nil, requiresIssuer: false, createdAt: Date(timeIntervalSince1970: 0))
        #expect(!pending.isPushedRequestExpired(at: .distantFuture))
    }

    // MARK: - DPoP (RFC 9449 §10.1)

    @Test func aDPoPGrantsPushCarriesAProofOfItsKeyAndDPoPJKT() async throws {
        var configuration = try Self.configuration()
        configuration.dpop = DPoPSettings()
        let harness = try ClientHarness(configuration: configuration)
        enqueuePushAnswer(harness)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let key = try #require(pending.dpopKey)

        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        let proof = try OAuth2ProviderDPoPTests.proof(of: push)
        #expect(proof.thumbprint == key.thumbprint)
        #expect(proof.claims["htm"] == .string("POST"))
        #expect(proof.claims["htu"] == .string(Self.parURL.absoluteString))
        #expect(Fixture.formFields(push.body)["dpop_jkt"] == key.thumbprint)
        #expect(try Self.query(pending.url).map(\.0) == ["client_id", "request_uri"])
        // The key travels with the pushed pending authorization as with any other.
        let decoded = try JSONDecoder().decode(PendingAuthorization.self, from: JSONEncoder().encode(pending))
        #expect(decoded.dpopKey?.thumbprint == key.thumbprint)
        #expect(decoded.pushedRequestExpiresAt == pending.pushedRequestExpiresAt)
    }

    @Test func aPushTheServerRefusesForANonceIsSentOnceMoreWithIt() async throws {
        var configuration = try Self.configuration()
        configuration.dpop = DPoPSettings()
        let harness = try ClientHarness(configuration: configuration)
        harness.transport.enqueue(
            json: OAuth2ProviderDPoPTests.useNonce, status: 400, headers: [OAuth2ProviderDPoPTests.nonceField: "n-par-1"], for: Self.parURL)
        enqueuePushAnswer(harness)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let pushes = harness.transport.requests(for: Self.parURL)
        #expect(pushes.count == 2)
        let first = try OAuth2ProviderDPoPTests.proof(of: pushes.first)
        let second = try OAuth2ProviderDPoPTests.proof(of: pushes.last)
        #expect(first.nonce == nil)
        #expect(second.nonce == "n-par-1")
        #expect(first.jti != second.jti)
        #expect(pending.pushedRequestExpiresAt != nil)
    }

    @Test func aBearerGrantsPushCarriesNoProof() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        enqueuePushAnswer(harness)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        #expect(push.headers[OAuth2ProviderDPoPTests.proofField] == nil)
        #expect(Fixture.formFields(push.body)["dpop_jkt"] == nil)
        #expect(pending.dpopKey == nil)
    }

    @Test func aSignedRequestObjectOfADPoPGrantNamesItsKey() async throws {
        var configuration = try Self.configuration(key: try Self.ecKey(), pushed: .never)
        configuration.signsRequestObject = true
        configuration.dpop = DPoPSettings()
        let harness = try ClientHarness(configuration: configuration)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let request = try #require(try Self.query(pending.url).first { $0.0 == "request" }?.1)
        let claims = try CompactJWS(request).payloadObject()
        #expect(claims["dpop_jkt"] == .string(try #require(pending.dpopKey).thumbprint))
    }

    // MARK: - JAR

    /// The request object's claims, after checking its header and signature with the key's public JWK.
    static func verifiedClaims(_ text: String, key: JWTSigningKey) throws -> [String: JSONValue] {
        let jws = try CompactJWS(text)
        #expect(jws.header["typ"] == .string("oauth-authz-req+jwt"))
        #expect(jws.header["alg"] == .string(key.algorithm.rawValue))
        #expect(jws.header["kid"] == .string("client-key"))
        _ = try jws.verify(with: JOSEFixtures.keySet(of: key), allowedAlgorithms: [key.algorithm])
        return try jws.payloadObject()
    }

    @Test func aSignedRequestObjectGoesByValueWithOnlyTheClientID() async throws {
        let key = try Self.ecKey()
        var configuration = try Self.configuration(key: key, pushed: .never)
        configuration.signsRequestObject = true
        configuration.resources = [URL(string: "https://api.example/a")!, URL(string: "https://api.example/b")!]
        let harness = try ClientHarness(configuration: configuration)
        let pending = try await harness.provider.authorizationURL(
            redirectURI: Fixture.redirectURI, scopes: ["read", "write"], additionalParameters: [("prompt", "login")])
        #expect(harness.transport.requests.isEmpty)

        let query = try Self.query(pending.url)
        #expect(query.map(\.0) == ["client_id", "request"])
        #expect(query[0].1 == "client-1")
        let claims = try Self.verifiedClaims(query[1].1, key: key)
        let now = harness.clock.now().timeIntervalSince1970.rounded(.down)
        #expect(claims["iss"] == .string("client-1"))
        #expect(claims["aud"] == .string(Self.issuer))
        #expect(claims["client_id"] == .string("client-1"))
        #expect(claims["response_type"] == .string("code"))
        #expect(claims["redirect_uri"] == .string(Fixture.redirectURI.absoluteString))
        #expect(claims["scope"] == .string("read write"))
        #expect(claims["state"] == .string(pending.state))
        #expect(claims["code_challenge"] == .string(PKCE.challenge(for: pending.codeVerifier)))
        #expect(claims["code_challenge_method"] == .string("S256"))
        #expect(claims["prompt"] == .string("login"))
        #expect(claims["resource"] == .array([.string("https://api.example/a"), .string("https://api.example/b")]))
        #expect(claims["iat"] == .number(now))
        #expect(claims["nbf"] == .number(now))
        #expect(claims["exp"] == .number(now + 600))
        #expect(claims["jti"]?.stringValue?.isEmpty == false)
    }

    @Test func aSignedRequestObjectInsideThePushIsAllTheBodyCarries() async throws {
        let key = try Self.ecKey()
        var configuration = try Self.configuration(clientAuthentication: .clientSecretBasic, key: key)
        configuration.signsRequestObject = true
        let harness = try ClientHarness(configuration: configuration)
        enqueuePushAnswer(harness)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)

        let push = try #require(harness.transport.requests(for: Self.parURL).first)
        #expect(push.headers[.authorization]?.hasPrefix("Basic ") == true)
        let body = try FormURLEncoding.decode(Substring(String(decoding: push.body ?? Data(), as: UTF8.self)))
        #expect(body.map(\.0) == ["client_id", "request"])
        let claims = try Self.verifiedClaims(body[1].1, key: key)
        #expect(claims["state"] == .string(pending.state))
        #expect(try Self.query(pending.url).map(\.0) == ["client_id", "request_uri"])
    }

    @Test func theProviderRequiringSignedRequestsTurnsSigningOn() async throws {
        let key = try Self.ecKey()
        var configuration = try Self.configuration(key: key, pushed: .never)
        configuration.requiresSignedRequestObject = true
        let harness = try ClientHarness(configuration: configuration)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        #expect(try Self.query(pending.url).map(\.0) == ["client_id", "request"])
    }

    @Test func anAlgorithmTheProviderDoesNotListIsRefused() async throws {
        let key = try Self.ecKey()
        var configuration = try Self.configuration(key: key, pushed: .never)
        configuration.signsRequestObject = true
        configuration.requestObjectSigningAlgValuesSupported = ["PS256", "RS256"]
        let harness = try ClientHarness(configuration: configuration)
        let error = await oauth2Error { _ = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("request_object_signing_alg_values_supported") == true)

        configuration.requestObjectSigningAlgValuesSupported = ["ES256"]
        _ = try await ClientHarness(configuration: configuration).provider.authorizationURL(redirectURI: Fixture.redirectURI)
    }

    @Test func aRequiredSignedRequestWithoutAKeyOrAParameterNamedLikeAClaimIsRefused() async throws {
        var configuration = try Self.configuration(pushed: .never)
        configuration.requiresSignedRequestObject = true
        let noKey = await oauth2Error {
            _ = try await ClientHarness(configuration: configuration).provider.authorizationURL(redirectURI: Fixture.redirectURI)
        }
        #expect(noKey?.code == .invalidConfiguration)

        configuration.clientAssertionKey = try Self.ecKey()
        let harness = try ClientHarness(configuration: configuration)
        let claim = await oauth2Error {
            _ = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI, additionalParameters: [("aud", "x")])
        }
        #expect(claim?.code == .invalidConfiguration)
    }
}

/// Request objects passed by reference from a URL the app hosts (RFC 9101 §5.2,
/// OpenID Connect Core §6.2).
@Suite struct OAuth2ProviderHostedRequestObjectTests {
    static let base = URL(string: "https://app.example/request-objects")!

    static func configuration(key: JWTSigningKey? = nil, pushed: PushedAuthorization = .never) throws -> OAuth2Configuration {
        var configuration = try OAuth2ProviderAuthorizationTests.configuration(
            key: key ?? OAuth2ProviderAuthorizationTests.ecKey(), pushed: pushed)
        configuration.openID = OpenIDSettings(jwksURI: URL(string: "https://idp.example/jwks")!)
        return configuration
    }

    @Test func theBrowsersURLCarriesTheRequestURIAndCore62sParametersOnly() throws {
        let harness = try ClientHarness(configuration: try Self.configuration())
        let (pending, object) = try harness.provider.authorizationURL(
            redirectURI: Fixture.redirectURI, scopes: ["openid", "read"], hostingRequestObjectUnder: Self.base)
        #expect(harness.transport.requests.isEmpty, "the provider fetches the object; the client sends nothing")
        let query = try OAuth2ProviderAuthorizationTests.query(pending.url)
        #expect(query.map(\.0) == ["response_type", "client_id", "request_uri", "scope"])
        #expect(query.map(\.1) == ["code", "client-1", object.url.absoluteString, "openid read"])
        #expect(object.url.absoluteString == Self.base.absoluteString + "/" + object.id)
        #expect(pending.url.absoluteString.hasPrefix(Fixture.authorizeURL.absoluteString + "?"))
    }

    @Test func theHostedObjectIsSignedAndCarriesTheFlowsParameters() throws {
        let key = try OAuth2ProviderAuthorizationTests.ecKey()
        let harness = try ClientHarness(configuration: try Self.configuration(key: key))
        let (pending, object) = try harness.provider.authorizationURL(
            redirectURI: Fixture.redirectURI, scopes: ["openid"], additionalParameters: [("login_hint", "alice")],
            hostingRequestObjectUnder: Self.base)
        let claims = try OAuth2ProviderAuthorizationTests.verifiedClaims(object.jwt, key: key)
        let query = Dictionary(uniqueKeysWithValues: try OAuth2ProviderAuthorizationTests.query(pending.url))
        for name in ["response_type", "client_id", "scope"] {
            #expect(claims[name] == query[name].map(JSONValue.string), "\(name) is the same in the query and the object")
        }
        #expect(claims["redirect_uri"] == .string(Fixture.redirectURI.absoluteString))
        #expect(claims["state"] == .string(pending.state))
        #expect(claims["nonce"] == .string(try #require(pending.nonce).value))
        #expect(claims["code_challenge"] == .string(PKCE.challenge(for: pending.codeVerifier)))
        #expect(claims["login_hint"] == .string("alice"))
        #expect(claims["iss"] == .string("client-1"))
        #expect(claims["aud"] == .string(OAuth2ProviderAuthorizationTests.issuer))
        #expect(claims["exp"] == .number(object.expiresAt.timeIntervalSince1970))
        #expect(object.expiresAt.timeIntervalSince1970 == harness.clock.now().timeIntervalSince1970.rounded(.down) + 600)
        #expect(claims["request_uri"] == nil)
    }

    @Test func everyAuthorizationGetsItsOwnURL() throws {
        let harness = try ClientHarness(configuration: try Self.configuration())
        let objects = try (0..<20).map { _ in
            try harness.provider.authorizationURL(
                redirectURI: Fixture.redirectURI, scopes: ["openid"], hostingRequestObjectUnder: Self.base
            )
            .requestObject
        }
        #expect(Set(objects.map(\.url)).count == objects.count)
        #expect(objects.allSatisfy { Base64URL.decode($0.id)?.count == 32 })
    }

    @Test func theRedirectIsCheckedAsForAnyAuthorization() async throws {
        let harness = try ClientHarness(
            configuration: try OAuth2ProviderAuthorizationTests.configuration(key: OAuth2ProviderAuthorizationTests.ecKey(), pushed: .never)
        )
        let (pending, _) = try harness.provider.authorizationURL(
            redirectURI: Fixture.redirectURI, scopes: ["read"], hostingRequestObjectUnder: Self.base)
        let forged = Fixture.redirectURI.absoluteString + "?code=abc&state=not-the-state"
        let error = await oauth2Error { _ = try await harness.provider.token(for: .authorizationCode(redirect: forged, pending: pending)) }
        #expect(error?.code == .stateMismatch)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func aBadBaseURLIsRefusedBeforeAnythingIsSigned() async throws {
        let harness = try ClientHarness(configuration: try Self.configuration())
        let insecure = await oauth2Error {
            _ = try harness.provider.authorizationURL(
                redirectURI: Fixture.redirectURI, hostingRequestObjectUnder: try #require(URL(string: "http://app.example/ro")))
        }
        #expect(insecure?.code == .insecureEndpoint)
        let query = await oauth2Error {
            _ = try harness.provider.authorizationURL(
                redirectURI: Fixture.redirectURI, hostingRequestObjectUnder: try #require(URL(string: "https://app.example/ro?id=1")))
        }
        #expect(query?.code == .invalidConfiguration)
    }

    @Test func withoutAKeyOrWhenRequestsArePushedThereIsNoHostedObject() async throws {
        var configuration = try Self.configuration()
        configuration.clientAssertionKey = nil
        let noKey = await oauth2Error {
            _ = try ClientHarness(configuration: configuration).provider.authorizationURL(
                redirectURI: Fixture.redirectURI, hostingRequestObjectUnder: Self.base)
        }
        #expect(noKey?.code == .invalidConfiguration)
        let pushing = await oauth2Error {
            _ = try ClientHarness(configuration: try Self.configuration(pushed: .always)).provider.authorizationURL(
                redirectURI: Fixture.redirectURI, hostingRequestObjectUnder: Self.base)
        }
        #expect(pushing?.code == .invalidConfiguration)
        #expect(pushing?.message.contains("RFC 9126") == true)
    }

    /// A configuration from discovery whose metadata says `request_uri_parameter_supported`.
    static func discovered(requestURIParameterSupported: Bool?) throws -> OAuth2Configuration {
        let metadata = AuthorizationServerMetadata(
            issuer: OAuth2ProviderAuthorizationTests.issuer, authorizationEndpoint: Fixture.authorizeURL, tokenEndpoint: Fixture.tokenURL,
            jwksURI: URL(string: "https://idp.example/jwks")!,
            requestURIParameterSupported: requestURIParameterSupported ?? true)
        var configuration = try OAuth2Configuration(metadata: metadata, clientID: "client-1")
        configuration.clientAssertionKey = try OAuth2ProviderAuthorizationTests.ecKey()
        return configuration
    }

    @Test func aProviderWhoseMetadataSaysItTakesNoRequestURIIsRefusedBeforeAnythingIsSigned() async throws {
        let configuration = try Self.discovered(requestURIParameterSupported: false)
        #expect(!configuration.requestURIParameterSupported)
        let harness = try ClientHarness(configuration: configuration)
        let error = await oauth2Error {
            _ = try harness.provider.authorizationURL(redirectURI: Fixture.redirectURI, hostingRequestObjectUnder: Self.base)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("request_uri_parameter_supported") == true, "\(error?.message ?? "")")
        // By value it still goes.
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        #expect(try OAuth2ProviderAuthorizationTests.query(pending.url).contains { $0.0 == "request_uri" } == false)
    }

    @Test func aProviderWhoseMetadataSaysNothingOrTrueTakesAHostedObject() throws {
        for supported in [nil, true] as [Bool?] {
            let harness = try ClientHarness(configuration: try Self.discovered(requestURIParameterSupported: supported))
            let (pending, object) = try harness.provider.authorizationURL(
                redirectURI: Fixture.redirectURI, hostingRequestObjectUnder: Self.base)
            #expect(try OAuth2ProviderAuthorizationTests.query(pending.url).contains { $0 == ("request_uri", object.url.absoluteString) })
        }
    }
}
