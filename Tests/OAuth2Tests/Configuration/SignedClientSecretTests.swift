import Crypto
import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// Sign in with Apple's client secret, as Apple's "Generate and validate
/// tokens" page describes it ("Creating the client secret"): a JWT with the
/// header `alg` ES256 and `kid` the 10-character key id, and the claims `iss`
/// (the 10-character team id), `iat`, `exp` (at most 15777000 s, six months,
/// after `iat`), `aud` `https://appleid.apple.com` and `sub` (the client id),
/// signed with the `.p8` key.
@Suite struct SignedClientSecretTests {
    static let privateKey = P256.Signing.PrivateKey()
    static let now = Date(timeIntervalSince1970: 1_700_000_000.6)

    static func settings(lifetime: Duration = .seconds(3600), margin: Duration = .seconds(300)) throws -> SignedClientSecret {
        try SignedClientSecret(
            issuer: "TEAM123456", audience: "https://appleid.apple.com",
            key: JWTSigningKey.ecdsa(pem: privateKey.pemRepresentation, keyID: "KEY1234567"),
            lifetime: lifetime, renewalMargin: margin)
    }

    /// The header and claims, after checking the ES256 signature with
    /// swift-crypto's P-256 public key directly (not the library's JWS code).
    static func verified(_ secret: Secret) throws -> (header: [String: JSONValue], claims: [String: JSONValue]) {
        let parts = secret.value.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(String(parts[2]))))
        #expect(privateKey.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
        func object(_ part: Substring) throws -> [String: JSONValue] {
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(try #require(Base64URL.decode(String(part)))))
            guard case .object(let members) = value else { throw OAuth2Error(code: .invalidJWT, message: "not an object") }
            return members
        }
        return (try object(parts[0]), try object(parts[1]))
    }

    @Test func theSecretIsAnES256JWTWithApplesHeaderAndClaims() throws {
        let secret = try Self.settings().secret(clientID: "com.example.service", now: Self.now)
        let (header, claims) = try Self.verified(secret)
        #expect(header == ["alg": .string("ES256"), "kid": .string("KEY1234567")])
        #expect(
            claims == [
                "iss": .string("TEAM123456"), "sub": .string("com.example.service"), "aud": .string("https://appleid.apple.com"),
                "iat": .number(1_700_000_000), "exp": .number(1_700_003_600),
            ])
    }

    @Test func theSecretIsReusedUntilTheMarginThenRenewed() throws {
        let settings = try Self.settings()
        let first = try settings.secret(clientID: "c", now: Self.now)
        let copy = settings
        #expect(try copy.secret(clientID: "c", now: Self.now.addingTimeInterval(3299)) == first)
        let renewed = try settings.secret(clientID: "c", now: Self.now.addingTimeInterval(3300))
        #expect(renewed != first)
        #expect(try Self.verified(renewed).claims["iat"] == .number(1_700_003_300))
        #expect(try settings.secret(clientID: "c", now: Self.now.addingTimeInterval(3301)) == renewed)
    }

    @Test func aClockSetBackOrAnotherClientIDGetsANewSecret() throws {
        let settings = try Self.settings()
        let first = try settings.secret(clientID: "c", now: Self.now)
        let earlier = try settings.secret(clientID: "c", now: Self.now.addingTimeInterval(-10))
        #expect(earlier != first)
        let other = try settings.secret(clientID: "d", now: Self.now.addingTimeInterval(-10))
        #expect(try Self.verified(other).claims["sub"] == .string("d"))
    }

    @Test func theLifetimeIsAtMostSixMonthsAndTheMarginShorterThanIt() throws {
        let six = try Self.settings(lifetime: .seconds(15_777_000), margin: .seconds(86_400))
        let claims = try Self.verified(try six.secret(clientID: "c", now: Self.now)).claims
        #expect(claims["exp"] == .number(1_700_000_000 + 15_777_000))
        let key = try JWTSigningKey.ecdsa(pem: Self.privateKey.pemRepresentation, keyID: "KEY1234567")
        let refused: [(Duration, Duration)] = [
            (.seconds(15_777_001), .seconds(60)), (.zero, .zero), (.seconds(60), .seconds(60)), (.seconds(60), .seconds(-1)),
        ]
        for (lifetime, margin) in refused {
            let error = FlowFixtures.error { () throws(OAuth2Error) in
                try SignedClientSecret(issuer: "T", audience: "a", key: key, lifetime: lifetime, renewalMargin: margin)
            }
            #expect(error?.code == .invalidConfiguration)
        }
    }

    @Test func anHMACKeyOrAnEmptyIssuerIsRefused() throws {
        let hmac = try JWTSigningKey.hmac(.opaque(String(repeating: "k", count: 32)))
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try SignedClientSecret(issuer: "T", audience: "https://appleid.apple.com", key: hmac)
        }
        #expect(error?.code == .invalidConfiguration)
        let key = try JWTSigningKey.ecdsa(pem: Self.privateKey.pemRepresentation, keyID: "K")
        #expect(
            FlowFixtures.error { () throws(OAuth2Error) in try SignedClientSecret(issuer: "", audience: "a", key: key) }?.code
                == .invalidConfiguration)
    }

    @Test func itsDescriptionShowsNeitherKeyNorSecret() throws {
        let settings = try Self.settings()
        let secret = try settings.secret(clientID: "c", now: Self.now)
        #expect(settings.description == "SignedClientSecret(iss TEAM123456, aud https://appleid.apple.com, kid KEY1234567, ES256)")
        #expect(!secret.description.contains(secret.value.prefix(10)))
    }

    @Test func tokenAndRevocationRequestsSendTheSignedSecretWithClientSecretPost() throws {
        var configuration = try FlowFixtures.configuration(clientSecret: nil)
        configuration.signedClientSecret = try Self.settings()
        configuration.clientAuthentication = .clientSecretPost
        try configuration.validate()
        let grant = Grant.refreshToken(Secret("rt"), scopes: [])
        let token = try TokenRequestBuilder.tokenRequest(for: grant, configuration: configuration, now: Self.now)
        let revocation = try TokenRequestBuilder.revocationRequest(
            token: Secret("rt"), tokenTypeHint: "refresh_token", configuration: configuration, now: Self.now)
        for request in [token, revocation] {
            let fields = Fixture.formFields(request.body)
            #expect(request.headers[.authorization] == nil)
            #expect(fields["client_id"] == "client-id")
            let secret = try #require(fields["client_secret"])
            #expect(try Self.verified(Secret(secret)).claims["sub"] == .string("client-id"))
        }
        #expect(Fixture.formFields(token.body)["client_secret"] == Fixture.formFields(revocation.body)["client_secret"])
    }

    @Test func theInitializerDefaultsToClientSecretPostAndRefusesBothSecrets() throws {
        let signed = try Self.settings()
        let configuration = try OAuth2Configuration(
            clientID: "c", tokenEndpoint: FlowFixtures.tokenEndpoint, signedClientSecret: signed)
        #expect(configuration.clientAuthentication == .clientSecretPost)
        let both = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(
                clientID: "c", clientSecret: Secret("s"), tokenEndpoint: FlowFixtures.tokenEndpoint, signedClientSecret: signed)
        }
        #expect(both?.code == .invalidConfiguration)
        let jwt = FlowFixtures.error { () throws(OAuth2Error) in
            try OAuth2Configuration(
                clientID: "c", tokenEndpoint: FlowFixtures.tokenEndpoint, clientAuthentication: .privateKeyJWT, signedClientSecret: signed)
        }
        #expect(jwt?.code == .invalidConfiguration)
    }

    @Test func aProviderRenewsTheSecretOnItsClockAcrossTokenRequests() async throws {
        var configuration = try Fixture.configuration()
        configuration.clientSecret = nil
        configuration.signedClientSecret = try Self.settings()
        configuration.clientAuthentication = .clientSecretPost
        let harness = try ClientHarness(configuration: configuration)
        for _ in 0..<3 {
            harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        }
        _ = try await harness.provider.token(for: .clientCredentials)
        harness.clock.advance(by: .seconds(3000))
        _ = try await harness.provider.token(for: .clientCredentials)
        harness.clock.advance(by: .seconds(600))
        _ = try await harness.provider.token(for: .clientCredentials)
        let secrets = harness.tokenRequests.map { Fixture.formFields($0.body)["client_secret"] }
        #expect(secrets.count == 3)
        #expect(secrets[0] != nil && secrets[0] == secrets[1])
        #expect(secrets[2] != nil && secrets[2] != secrets[1])
        #expect(!harness.logs.all.contains { line in secrets.contains { $0.map(line.contains) ?? false } })
    }
}
