import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// Signed userinfo answers (OpenID Connect Core §5.3.2, `application/jwt`):
/// read only once verified against the provider's key set, and only when
/// they are this issuer's answer to this client.
@Suite struct UserInfoTests {
    static let jwksURI = URL(string: "https://id.example/jwks")!
    static let issuer = "https://id.example"

    let key: JWTSigningKey
    let signed: SignedClaimsVerification

    init() throws {
        key = try JWTSigningKey.rsa(pem: JOSEFixtures.rsaKey.pemRepresentation, keyID: "key-1")
        let transport = CannedTransport()
        let jwks = JSONValue.object(["keys": .array([key.publicJWK.map(JSONValue.object)].compactMap { $0 })])
        let body = try JSONEncoder().encode(jwks)
        transport.respond { _ in HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: body) }
        let keys = KeySetCache(
            settings: OpenIDSettings(jwksURI: Self.jwksURI), transport: transport, clock: ManualClock(), timeout: .seconds(5),
            maxSize: 1 << 20)
        signed = SignedClaimsVerification(keys: keys, allowedAlgorithms: [.rs256], issuer: Self.issuer, clientID: "app")
    }

    func answer(_ text: String) -> HTTPTransportResponse {
        HTTPTransportResponse(status: 200, headers: [.contentType: "application/jwt; charset=utf-8"], body: Data(text.utf8))
    }

    func answer(_ claims: [String: JSONValue], key: JWTSigningKey? = nil) throws -> HTTPTransportResponse {
        answer(try JWT.sign(claims: claims, key: key ?? self.key).value)
    }

    func parse(_ response: HTTPTransportResponse, signed: SignedClaimsVerification?) async throws(OAuth2Error) -> UserInfo {
        try await UserInfo.parse(response, maxBodySize: 1 << 20, now: Date(), signed: signed)
    }

    func error(_ response: HTTPTransportResponse) async -> OAuth2Error.Code? {
        do {
            _ = try await parse(response, signed: signed)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aSignedAnswerIsReadOnceItsSignatureIsVerified() async throws {
        let claims: [String: JSONValue] = [
            "sub": .string("alice"), "email": .string("alice@example.com"), "iss": .string(Self.issuer), "aud": .string("app"),
        ]
        let info = try await parse(try answer(claims), signed: signed)
        #expect(info.subject == "alice")
        #expect(info.email == "alice@example.com")
        let withoutIssAndAud = try await parse(try answer(["sub": .string("alice")]), signed: signed)
        #expect(withoutIssAndAud.subject == "alice", "§5.3.2 says a signed answer should carry them, not must")
        let severalAudiences = try await parse(
            try answer(["sub": .string("alice"), "aud": .array([.string("other"), .string("app")])]), signed: signed)
        #expect(severalAudiences.subject == "alice")
    }

    @Test func aSignedAnswerForAnotherIssuerOrClientIsRefused() async throws {
        #expect(await error(try answer(["sub": .string("alice"), "iss": .string("https://evil.example")])) == .issuerMismatch)
        #expect(await error(try answer(["sub": .string("alice"), "aud": .string("other-app")])) == .audienceMismatch)
        #expect(await error(try answer(["sub": .string("alice"), "aud": .number(1)])) == .audienceMismatch)
    }

    @Test func aSignedAnswerThatDoesNotVerifyIsRefused() async throws {
        let impostor = try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "key-1")
        #expect(await error(try answer(["sub": .string("alice")], key: impostor)) == .invalidSignature)
        let unsigned = JOSEFixtures.token(header: #"{"alg":"none"}"#, payload: #"{"sub":"alice"}"#, signature: [])
        #expect(await error(answer(unsigned)) == .unsupportedAlgorithm)
        #expect(await error(answer("not.a.jwt")) == .invalidJWT)
    }

    @Test func anEncryptedAnswerOrOneWithoutAKeySetIsRefused() async throws {
        #expect(await error(answer("eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d")) == .invalidTokenResponse)
        let withoutKeys = await #expect(throws: OAuth2Error.self) {
            _ = try await parse(try answer(["sub": .string("alice")]), signed: nil)
        }
        #expect(withoutKeys?.code == .invalidTokenResponse)
    }

    @Test func aJSONAnswerIsReadAsBefore() async throws {
        let response = HTTPTransportResponse(
            status: 200, headers: [.contentType: "application/json"], body: Data(#"{"sub":"alice","name":"Alice"}"#.utf8))
        #expect(try await parse(response, signed: signed).name == "Alice")
    }
}

/// What claim source resolution adds to a user survives encoding, and a user
/// encoded before it still decodes.
@Suite struct UserInfoCodingTests {
    @Test func aUserEncodedBeforeClaimSourcesDecodesAndResolvedOnesRoundTrip() throws {
        let old = try JSONDecoder().decode(UserInfo.self, from: Data(#"{"subject":"alice","claims":{"sub":"alice"}}"#.utf8))
        #expect(old.subject == "alice" && old.claimSources.isEmpty && old.unresolvedClaimSources.isEmpty)
        var info = try UserInfo(claims: ["sub": .string("alice")])
        info.resolve(
            ["x": .number(1)], from: ClaimSource(name: "s", issuer: "https://id.example", endpoint: URL(string: "https://c.example/x")))
        info.record(UnresolvedClaimSource(source: "t", claims: ["z", "y"], code: .invalidSignature, message: "m"))
        let decoded = try JSONDecoder().decode(UserInfo.self, from: JSONEncoder().encode(info))
        #expect(decoded == info)
        #expect(decoded.claims["x"] == .number(1) && decoded.unresolvedClaimSources.first?.claims == ["y", "z"])
        #expect(decoded.unresolvedClaimSources.first?.error.code == .invalidSignature)
    }
}
