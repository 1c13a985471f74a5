import Crypto
import Foundation
import Logging
import OAuth2Testing
import Testing
import _CryptoExtras
@testable import OAuth2

/// ID tokens end to end through the provider: signed with real keys,
/// checked against a key set served by a canned JWKS endpoint the test
/// controls, and every hostile token refused with its own code.
@Suite struct IDTokenVerificationTests {
    static let issuer = "https://id.example"
    static let jwksURL = URL(string: "https://id.example/jwks")!
    static let tokenURL = URL(string: "https://id.example/token")!
    static let redirectURI = URL(string: "https://app.example/callback")!

    /// A provider whose JWKS endpoint serves `keys` and counts its fetches.
    final class World: Sendable {
        let transport = CannedTransport()
        let clock = ManualClock()
        let store = InMemoryTokenStore()
        let logs = CapturedLogs()
        let provider: OAuth2Provider
        let served = LockedValue<(keys: [JWTSigningKey], body: String?, down: Bool)>(([], nil, false))
        let jwksFetches = LockedValue(0)
        /// The token endpoint's answer to each authorization code.
        let codeResponses = LockedValue<[String: String]>([:])
        let signingKey: JWTSigningKey

        init(
            refetchInterval: Duration = .seconds(30),
            clientAuthentication: ClientAuthentication? = nil,
            clientAssertionKey: JWTSigningKey? = nil
        ) throws {
            signingKey = try JWTSigningKey.rsa(pem: JOSEFixtures.rsaKey.pemRepresentation, keyID: "key-1")
            let configuration = try OAuth2Configuration(
                clientID: "app",
                clientSecret: Secret("a-client-secret-of-at-least-32-bytes!"),
                authorizationEndpoint: URL(string: "https://id.example/authorize"),
                tokenEndpoint: IDTokenVerificationTests.tokenURL,
                clientAuthentication: clientAuthentication,
                issuer: IDTokenVerificationTests.issuer,
                openID: OpenIDSettings(jwksURI: IDTokenVerificationTests.jwksURL, keySetRefetchInterval: refetchInterval),
                clientAssertionKey: clientAssertionKey
            )
            let logs = self.logs
            var logger = Logger(label: "test", factory: { _ in CapturingLogHandler(logs: logs) })
            logger.logLevel = .trace
            provider = try OAuth2Provider(configuration: configuration, store: store, transport: transport, clock: clock, logger: logger)
            served.withLock { $0.keys = [signingKey] }
            let served = self.served
            let fetches = self.jwksFetches
            let codeResponses = self.codeResponses
            transport.respond { request in
                if request.url == IDTokenVerificationTests.tokenURL {
                    // The answer to each code, whatever order concurrent sign-ins arrive in.
                    let form = try FormURLEncoding.decode(String(decoding: request.body ?? Data(), as: UTF8.self)[...])
                    let code = form.first { $0.0 == "code" }?.1 ?? ""
                    guard let body = codeResponses.withLock({ $0.removeValue(forKey: code) }) else {
                        return HTTPTransportResponse(
                            status: 400, headers: [.contentType: "application/json"], body: Data(#"{"error":"invalid_grant"}"#.utf8))
                    }
                    return HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(body.utf8))
                }
                guard request.url == IDTokenVerificationTests.jwksURL else {
                    throw HTTPTransportError.unsupportedURL
                }
                fetches.withLock { $0 += 1 }
                let (keys, body, down) = served.withLock { $0 }
                if down { throw HTTPTransportError.connectFailed }
                let text: String
                if let body {
                    text = body
                } else {
                    let jwks = JSONValue.object(["keys": .array(keys.compactMap { $0.publicJWK.map(JSONValue.object) })])
                    text = String(decoding: try JSONEncoder().encode(jwks), as: UTF8.self)
                }
                return HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(text.utf8))
            }
        }

        var fetches: Int { jwksFetches.withLock { $0 } }

        func claims(nonce: String?, _ changes: [String: JSONValue?] = [:]) -> [String: JSONValue] {
            let now = clock.now().timeIntervalSince1970
            var claims: [String: JSONValue] = [
                "iss": .string(IDTokenVerificationTests.issuer), "sub": .string("alice-123"), "aud": .string("app"),
                "exp": .number(now + 300), "iat": .number(now), "email": .string("alice@example.com"), "name": .string("Alice"),
            ]
            if let nonce { claims["nonce"] = .string(nonce) }
            for (name, value) in changes { claims[name] = value }
            return claims
        }

        func idToken(nonce: String?, _ changes: [String: JSONValue?] = [:], key: JWTSigningKey? = nil) throws -> String {
            try JWT.sign(claims: claims(nonce: nonce, changes), key: key ?? signingKey).value
        }

        /// Runs the code flow with `makeIDToken`'s ID token (given the nonce) in the token response.
        func signIn(
            access: String = "access-1",
            scopes: [String] = ["openid", "email"],
            _ makeIDToken: (String?) throws -> String?
        ) async throws -> AccessToken {
            let pending = try await provider.authorizationURL(redirectURI: IDTokenVerificationTests.redirectURI, scopes: scopes)
            var fields = [
                "\"access_token\":\"\(access)\"", "\"token_type\":\"Bearer\"", "\"expires_in\":3600", "\"refresh_token\":\"refresh-1\"",
            ]
            if let idToken = try makeIDToken(pending.nonce?.value) { fields.append("\"id_token\":\"\(idToken)\"") }
            let code = "code-\(UUID().uuidString)"
            codeResponses.withLock { $0[code] = "{\(fields.joined(separator: ","))}" }
            return try await provider.token(
                for: .authorizationCode(redirect: "https://app.example/callback?code=\(code)&state=\(pending.state)", pending: pending))
        }

        func signInError(_ makeIDToken: (String?) throws -> String?) async -> OAuth2Error? {
            do {
                _ = try await signIn(makeIDToken)
                Issue.record("the sign-in succeeded")
                return nil
            } catch let error as OAuth2Error {
                return error
            } catch {
                Issue.record("unexpected \(error)")
                return nil
            }
        }
    }

    @Test func aGoodIDTokenSignsTheUserInAndIsKeptWithTheToken() async throws {
        let world = try World()
        let token = try await world.signIn { nonce in try world.idToken(nonce: nonce) }
        let idToken = try #require(token.idToken)
        #expect(idToken.subject == "alice-123")
        #expect(idToken.issuer == Self.issuer)
        #expect(idToken.email == "alice@example.com")
        #expect(token.rawIDToken != nil)
        // The key set is fetched once, then used from the cache.
        _ = try await world.signIn { nonce in try world.idToken(nonce: nonce) }
        #expect(world.fetches == 1)
        // Stored and read back with the token.
        let client = world.provider.client(account: "alice")
        _ = try await client.adopt(token)
        #expect(try await world.store.load(account: "alice")?.idToken == idToken)
        #expect(try await client.idToken()?.subject == "alice-123")
    }

    @Test func theCodeFlowRequiresAnIDTokenWhenItAskedForOpenID() async throws {
        let world = try World()
        let error = await world.signInError { _ in nil }
        #expect(error?.code == .invalidIDToken)
        // Without openid in the scopes none is required, and none is expected.
        let token = try await world.signIn(scopes: ["read"]) { _ in nil }
        #expect(token.idToken == nil)
    }

    @Test func hostileAlgorithmsAreRefused() async throws {
        let world = try World()
        let claims = String(decoding: try JSONEncoder().encode(JSONValue.object(world.claims(nonce: "x"))), as: UTF8.self)
        // alg none, with and without the empty signature.
        var error = await world.signInError { nonce in
            JOSEFixtures.b64(#"{"alg":"none"}"#) + "."
                + JOSEFixtures.b64(String(decoding: try JSONEncoder().encode(JSONValue.object(world.claims(nonce: nonce))), as: UTF8.self))
                + "."
        }
        #expect(error?.code == .unsupportedAlgorithm)
        // HS256 keyed with the provider's public key, the classic confusion.
        let publicPEM = JOSEFixtures.rsaKey.publicKey.pemRepresentation
        error = await world.signInError { nonce in
            try world.idToken(nonce: nonce, key: try JWTSigningKey.hmac(Secret(publicPEM)))
        }
        #expect(error?.code == .unsupportedAlgorithm)
        _ = claims
    }

    @Test func aSignatureFromAnotherKeyWithTheSameKidIsRefused() async throws {
        let world = try World()
        let forger = try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "key-1")
        let error = await world.signInError { nonce in try world.idToken(nonce: nonce, key: forger) }
        #expect(error?.code == .invalidSignature)
    }

    @Test func anUnknownKidRefetchesTheKeySetWithinTheRateLimitOnly() async throws {
        let world = try World(refetchInterval: .seconds(30))
        _ = try await world.signIn { nonce in try world.idToken(nonce: nonce) }
        #expect(world.fetches == 1)
        let forger = try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "made-up")
        // Within the interval after a fetch, an unknown kid does not fetch again.
        var error = await world.signInError { nonce in try world.idToken(nonce: nonce, key: forger) }
        #expect(error?.code == .unknownSigningKey)
        #expect(world.fetches == 1)
        // After it, the first unknown kid fetches again (it may be a rotation)…
        world.clock.advance(by: .seconds(31))
        error = await world.signInError { nonce in try world.idToken(nonce: nonce, key: forger) }
        #expect(error?.code == .unknownSigningKey)
        #expect(world.fetches == 2)
        // …a stream of them within the interval does not.
        world.clock.advance(by: .seconds(10))
        for _ in 0..<20 {
            error = await world.signInError { nonce in try world.idToken(nonce: nonce, key: forger) }
            #expect(error?.code == .unknownSigningKey)
        }
        #expect(world.fetches == 2)
        world.clock.advance(by: .seconds(21))
        error = await world.signInError { nonce in try world.idToken(nonce: nonce, key: forger) }
        #expect(world.fetches == 3)
        // Genuine tokens kept working throughout.
        _ = try await world.signIn { nonce in try world.idToken(nonce: nonce) }
        #expect(world.fetches == 3)
    }

    @Test func aKeyRotationIsPickedUpWithoutARestart() async throws {
        let world = try World()
        _ = try await world.signIn { nonce in try world.idToken(nonce: nonce) }
        let newKey = try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "key-2")
        // The provider publishes the new key and drops the old one.
        world.served.withLock { $0.keys = [newKey] }
        world.clock.advance(by: .seconds(31))
        let token = try await world.signIn { nonce in try world.idToken(nonce: nonce, key: newKey) }
        #expect(token.idToken?.subject == "alice-123")
        #expect(world.fetches == 2)
        // A token signed by the removed key is refused once the cache has the new set.
        let old = await world.signInError { nonce in try world.idToken(nonce: nonce) }
        #expect(old?.code == .unknownSigningKey)
    }

    @Test func badClaimsAreRefusedEachWithItsCode() async throws {
        let world = try World()
        let now = world.clock.now().timeIntervalSince1970
        let cases: [(String, [String: JSONValue?], OAuth2Error.Code)] = [
            ("wrong iss", ["iss": .string("https://evil.example")], .issuerMismatch),
            ("aud without us", ["aud": .string("other-app")], .audienceMismatch),
            ("expired", ["exp": .number(now - 3600)], .idTokenExpired),
            ("not yet valid", ["nbf": .number(now + 3600)], .idTokenNotYetValid),
            ("issued in the future", ["iat": .number(now + 3600)], .idTokenNotYetValid),
            ("no sub", ["sub": .none], .invalidIDToken),
        ]
        for (name, changes, code) in cases {
            let error = await world.signInError { nonce in try world.idToken(nonce: nonce, changes) }
            #expect(error?.code == code, "\(name)")
        }
        let missingNonce = await world.signInError { _ in try world.idToken(nonce: nil) }
        #expect(missingNonce?.code == .nonceMismatch)
        let wrongNonce = await world.signInError { _ in try world.idToken(nonce: "another-authorizations-nonce") }
        #expect(wrongNonce?.code == .nonceMismatch)
        let badHash = await world.signInError { nonce in try world.idToken(nonce: nonce, ["at_hash": .string("AAAAAAAAAAAAAAAAAAAAAA")]) }
        #expect(badHash?.code == .accessTokenHashMismatch)
        let goodHash = try await world.signIn(access: "access-1") { nonce in
            try world.idToken(
                nonce: nonce, ["at_hash": .string(IDTokenVerifier.accessTokenHash(Secret("access-1"), algorithm: .rs256) ?? "")])
        }
        #expect(goodHash.idToken != nil)
    }

    @Test func oversizedAndMalformedTokensAreRefusedBeforeAnyKeyIsFetched() async throws {
        let world = try World()
        let huge = String(repeating: "a", count: 70 * 1024)
        var error = await world.signInError { nonce in try world.idToken(nonce: nonce, ["padding": .string(huge)]) }
        #expect(error?.code == .invalidJWT)
        error = await world.signInError { _ in "not.a-jwt" }
        #expect(error?.code == .invalidJWT)
        #expect(world.fetches == 0)
    }

    @Test func aKeySetEndpointThatIsDownOrAnswersGarbageFailsTheSignInAndIsNotHammered() async throws {
        let world = try World(refetchInterval: .seconds(30))
        world.served.withLock { $0.down = true }
        var error = await world.signInError { nonce in try world.idToken(nonce: nonce) }
        #expect(error?.code == .transportError)
        error = await world.signInError { nonce in try world.idToken(nonce: nonce) }
        #expect(error?.code == .transportError)
        #expect(world.fetches == 1)

        world.served.withLock { $0 = ($0.keys, "<html>oops</html>", false) }
        world.clock.advance(by: .seconds(31))
        error = await world.signInError { nonce in try world.idToken(nonce: nonce) }
        #expect(error?.code == .invalidJWKS)
        #expect(world.fetches == 2)

        world.served.withLock { $0.body = nil }
        world.clock.advance(by: .seconds(31))
        _ = try await world.signIn { nonce in try world.idToken(nonce: nonce) }
        #expect(world.fetches == 3)
    }

    @Test func concurrentSignInsFetchTheKeySetOnce() async throws {
        let world = try World()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let token = try await world.signIn(access: "access-\(index)") { nonce in try world.idToken(nonce: nonce) }
                    #expect(token.idToken != nil)
                }
            }
            try await group.waitForAll()
        }
        #expect(world.fetches == 1)
    }

    @Test func aRefreshedIDTokenMustBeTheSameUsersAndOneWithoutKeepsTheSignIns() async throws {
        let world = try World()
        let client = world.provider.client(account: "alice")
        _ = try await client.adopt(try await world.signIn { nonce in try world.idToken(nonce: nonce) })

        // A refresh without an ID token keeps the sign-in's.
        world.transport.enqueue(json: #"{"access_token":"access-2","token_type":"Bearer","expires_in":3600}"#, for: Self.tokenURL)
        var refreshed = try await client.refreshAccessToken()
        #expect(refreshed.idToken?.subject == "alice-123")
        #expect(refreshed.rawIDToken != nil)

        // A new one for the same user replaces it.
        let newer = try world.idToken(nonce: nil, ["name": .string("Alice B.")])
        world.transport.enqueue(
            json: #"{"access_token":"access-3","token_type":"Bearer","expires_in":3600,"id_token":"\#(newer)"}"#, for: Self.tokenURL)
        refreshed = try await client.refreshAccessToken()
        #expect(refreshed.idToken?.name == "Alice B.")

        // One for another user is refused, and the stored token is untouched.
        let other = try world.idToken(nonce: nil, ["sub": .string("mallory-9")])
        world.transport.enqueue(
            json: #"{"access_token":"access-4","token_type":"Bearer","expires_in":3600,"id_token":"\#(other)"}"#, for: Self.tokenURL)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await client.refreshAccessToken() }
        #expect(error?.code == .subjectMismatch)
        #expect(try await world.store.load(account: "alice")?.idToken?.subject == "alice-123")
    }

    @Test func noLogLineOrErrorCarriesTheIDToken() async throws {
        let world = try World()
        var raw = ""
        let token = try await world.signIn { nonce in
            raw = try world.idToken(nonce: nonce)
            return raw
        }
        let forged = await world.signInError { nonce in try world.idToken(nonce: nonce, ["aud": .string("x")]) }
        let signature = String(raw.split(separator: ".").last ?? "")
        let payload = String(raw.split(separator: ".").dropFirst().first ?? "")
        var dumped = ""
        dump(token, to: &dumped)
        for text in world.logs.all + [String(describing: forged), forged?.message ?? "", String(describing: token), dumped] {
            #expect(!text.contains(signature))
            #expect(!text.contains(payload))
            #expect(!text.contains("alice@example.com"))
        }
    }

    @Test func privateKeyJWTSignsAFreshAssertionForEveryRequest() async throws {
        let clientKey = try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "client-key")
        let world = try World(clientAuthentication: .privateKeyJWT, clientAssertionKey: clientKey)
        for index in 1...2 {
            world.transport.enqueue(json: #"{"access_token":"cc-\#(index)","token_type":"Bearer","expires_in":60}"#, for: Self.tokenURL)
            _ = try await world.provider.token(for: .clientCredentials)
        }
        var ids: Set<String> = []
        for request in world.transport.requests(for: Self.tokenURL) {
            let form = Dictionary(
                try FormURLEncoding.decode(String(decoding: try #require(request.body), as: UTF8.self)[...]), uniquingKeysWith: { $1 })
            #expect(form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
            #expect(form["client_secret"] == nil)
            #expect(request.headers[.authorization] == nil)
            let jws = try CompactJWS(try #require(form["client_assertion"]))
            try jws.verify(with: try JOSEFixtures.keySet(of: clientKey), allowedAlgorithms: [.es256])
            let claims = try jws.payloadObject()
            #expect(claims["iss"] == .string("app"))
            #expect(claims["sub"] == .string("app"))
            #expect(claims["aud"] == .string(Self.tokenURL.absoluteString))
            ids.insert(try #require(claims["jti"]?.stringValue))
            let assertion = try #require(form["client_assertion"])
            for line in world.logs.all {
                #expect(!line.contains(assertion))
                #expect(!line.contains(String(assertion.split(separator: ".")[2])))
            }
        }
        #expect(ids.count == 2)
        #expect(!world.logs.all.isEmpty)
    }

    @Test func clientSecretJWTSignsWithTheSecretAndNeverSendsIt() async throws {
        let world = try World(clientAuthentication: .clientSecretJWT)
        world.transport.enqueue(json: #"{"access_token":"cc","token_type":"Bearer","expires_in":60}"#, for: Self.tokenURL)
        _ = try await world.provider.token(for: .clientCredentials)
        let request = try #require(world.transport.requests(for: Self.tokenURL).first)
        let body = String(decoding: try #require(request.body), as: UTF8.self)
        #expect(!body.contains("a-client-secret-of-at-least-32-bytes"))
        let form = Dictionary(try FormURLEncoding.decode(body[...]), uniquingKeysWith: { $1 })
        let assertion = try #require(form["client_assertion"])
        let parts = assertion.split(separator: ".").map(String.init)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(parts[0]).\(parts[1])".utf8), using: SymmetricKey(data: Data("a-client-secret-of-at-least-32-bytes!".utf8)))
        #expect(Base64URL.encode(Array(mac)) == parts[2])
    }
}
