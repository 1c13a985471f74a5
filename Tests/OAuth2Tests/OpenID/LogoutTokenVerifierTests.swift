import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// Back-channel logout tokens through the provider (OpenID Connect
/// Back-Channel Logout 1.0 §2.6), signed with the ID token tests' keys and
/// checked against the key set their canned JWKS endpoint serves: a good one
/// accepted once, every rule's breach refused with its code.
@Suite struct LogoutTokenVerifierTests {
    typealias World = IDTokenVerificationTests.World

    static func claims(_ world: World, _ changes: [String: JSONValue?] = [:]) -> [String: JSONValue] {
        let now = world.clock.now().timeIntervalSince1970
        var claims: [String: JSONValue] = [
            "iss": .string(IDTokenVerificationTests.issuer), "sub": .string("alice-123"), "aud": .string("app"),
            "iat": .number(now), "exp": .number(now + 120), "jti": .string(UUID().uuidString), "sid": .string("session-7"),
            "events": .object([LogoutToken.backChannelLogoutEvent: .object([:])]),
            "ignored_claim": .string("claims not understood are ignored"),
        ]
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    static func sign(_ world: World, _ changes: [String: JSONValue?] = [:], key: JWTSigningKey? = nil, type: String? = "logout+jwt")
        throws -> String
    {
        try JWT.sign(claims: claims(world, changes), key: key ?? world.signingKey, type: type).value
    }

    static func refusal(_ world: World, _ raw: String) async -> OAuth2Error? {
        do {
            let token = try await world.provider.verifyLogoutToken(raw)
            Issue.record("accepted \(token)")
            return nil
        } catch {
            // Never the token, nor the session id, in what an app may log.
            #expect(!error.description.contains(raw))
            #expect(!error.description.contains("session-7"))
            return error
        }
    }

    @Test func aValidLogoutTokenIsAcceptedWithItsSessionAndSubject() async throws {
        let world = try World()
        let token = try await world.provider.verifyLogoutToken(try Self.sign(world, ["jti": .string("jti-1")]))
        #expect(token.issuer == IDTokenVerificationTests.issuer)
        #expect(token.subject == "alice-123")
        #expect(token.sessionID == "session-7")
        #expect(token.tokenID == "jti-1")
        #expect(token.audience == ["app"])
        #expect(token.events[LogoutToken.backChannelLogoutEvent] == .object([:]))
        #expect(!"\(token)".contains("session-7"))
    }

    @Test func aTokenSignedWithNoneIsRefused() async throws {
        let world = try World()
        let header = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8))
        let payload = Base64URL.encode(try JOSEJSON.serialize(.object(Self.claims(world))))
        #expect(await Self.refusal(world, "\(header).\(payload).")?.code == .unsupportedAlgorithm)
    }

    @Test func anotherOfTheProvidersKeysWithAnAlgorithmTheClientDoesNotExpectIsRefused() async throws {
        // The conformance suite's -wrong-alg: ES256 with the provider's own EC key, for an RS256 client.
        let world = try World()
        let ecKey = try JWTSigningKey.ecdsa(pem: JOSEFixtures.sec1P256, keyID: "ec-1")
        world.served.withLock { $0.keys.append(ecKey) }
        #expect(await Self.refusal(world, try Self.sign(world, key: ecKey))?.code == .unsupportedAlgorithm)
    }

    @Test func aForgedSignatureIsRefused() async throws {
        let world = try World()
        let forger = try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "key-1")
        #expect(await Self.refusal(world, try Self.sign(world, key: forger))?.code == .invalidSignature)
    }

    @Test func anotherIssuerIsRefused() async throws {
        let world = try World()
        let raw = try Self.sign(world, ["iss": .string(IDTokenVerificationTests.issuer + "INVALID")])
        #expect(await Self.refusal(world, raw)?.code == .issuerMismatch)
    }

    @Test func anotherAudienceIsRefused() async throws {
        let world = try World()
        #expect(await Self.refusal(world, try Self.sign(world, ["aud": .string("appINVALID")]))?.code == .audienceMismatch)
        let several = try Self.sign(world, ["aud": .array([.string("app"), .string("other")])])
        #expect(await Self.refusal(world, several)?.code == .audienceMismatch)
    }

    @Test func noEventsOrAnotherEventIsRefused() async throws {
        let world = try World()
        #expect(await Self.refusal(world, try Self.sign(world, ["events": nil]))?.code == .invalidLogoutToken)
        let foobar = JSONValue.object(["http://schemas.openid.net/event/foobar": .object([:])])
        #expect(await Self.refusal(world, try Self.sign(world, ["events": foobar]))?.code == .invalidLogoutToken)
        let notAnObject = JSONValue.object([LogoutToken.backChannelLogoutEvent: .string("yes")])
        #expect(await Self.refusal(world, try Self.sign(world, ["events": notAnObject]))?.code == .invalidLogoutToken)
    }

    @Test func aNonceIsRefused() async throws {
        let world = try World()
        let raw = try Self.sign(world, ["nonce": .string("logout_tokens_must_not_contain_a_nonce")])
        #expect(await Self.refusal(world, raw)?.code == .invalidLogoutToken)
    }

    @Test func subOrSidIsRequiredAndEitherAloneIsEnough() async throws {
        let world = try World()
        #expect(await Self.refusal(world, try Self.sign(world, ["sub": nil, "sid": nil]))?.code == .invalidLogoutToken)
        let onlySid = try await world.provider.verifyLogoutToken(try Self.sign(world, ["sub": nil]))
        #expect(onlySid.subject == nil && onlySid.sessionID == "session-7")
        let onlySub = try await world.provider.verifyLogoutToken(try Self.sign(world, ["sid": nil]))
        #expect(onlySub.subject == "alice-123" && onlySub.sessionID == nil)
        #expect(await Self.refusal(world, try Self.sign(world, ["sid": .number(7)]))?.code == .invalidLogoutToken)
    }

    @Test func theRequiredClaimsAreRequired() async throws {
        let world = try World()
        for claim in ["jti", "iat", "exp", "aud", "iss"] {
            #expect(await Self.refusal(world, try Self.sign(world, [claim: nil]))?.code == .invalidLogoutToken, "without \(claim)")
        }
    }

    @Test func expAndIatAreCheckedWithTheClockLeeway() async throws {
        let world = try World()
        let now = world.clock.now().timeIntervalSince1970
        let expired = try Self.sign(world, ["iat": .number(now - 300), "exp": .number(now - 61)])
        #expect(await Self.refusal(world, expired)?.code == .invalidLogoutToken)
        let future = try Self.sign(world, ["iat": .number(now + 61), "exp": .number(now + 180)])
        #expect(await Self.refusal(world, future)?.code == .invalidLogoutToken)
        _ = try await world.provider.verifyLogoutToken(try Self.sign(world, ["iat": .number(now - 300), "exp": .number(now - 59)]))
        _ = try await world.provider.verifyLogoutToken(try Self.sign(world, ["iat": .number(now + 59)]))
    }

    @Test func aTypOfAnotherKindOfTokenIsRefused() async throws {
        let world = try World()
        for type in [nil, "JWT", "logout+jwt", "Application/Logout+JWT"] as [String?] {
            _ = try await world.provider.verifyLogoutToken(try Self.sign(world, type: type))
        }
        #expect(await Self.refusal(world, try Self.sign(world, type: "at+jwt"))?.code == .invalidLogoutToken)
    }

    @Test func aJTIIsAcceptedOnceAndOnlyVerifiedTokensAreRemembered() async throws {
        let world = try World()
        // A token refused for its audience does not spend its jti.
        let refused = try Self.sign(world, ["jti": .string("jti-x"), "aud": .string("other")])
        #expect(await Self.refusal(world, refused)?.code == .audienceMismatch)
        let raw = try Self.sign(world, ["jti": .string("jti-x")])
        _ = try await world.provider.verifyLogoutToken(raw)
        #expect(await Self.refusal(world, raw)?.code == .logoutTokenReplayed)
        let again = try Self.sign(world, ["jti": .string("jti-x")])
        #expect(await Self.refusal(world, again)?.code == .logoutTokenReplayed)
    }

    @Test func theReplayCacheIsPerIssuerBoundedAndForgetsExpiredTokens() throws {
        let cache = LogoutTokenReplayCache(capacity: 2)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func token(_ issuer: String, _ jti: String) throws -> LogoutToken {
            try LogoutToken(claims: [
                "iss": .string(issuer), "aud": .string("app"), "iat": .number(0), "exp": .number(1), "jti": .string(jti),
                "sub": .string("s"), "events": .object([LogoutToken.backChannelLogoutEvent: .object([:])]),
            ])
        }
        try cache.accept(token("https://a", "1"), keepUntil: now + 100, now: now)
        // Another issuer's equal jti is another token.
        try cache.accept(token("https://b", "1"), keepUntil: now + 10, now: now)
        #expect(throws: OAuth2Error.self) { try cache.accept(token("https://a", "1"), keepUntil: now + 100, now: now) }
        // Full: the one that expires soonest ("b") makes room.
        try cache.accept(token("https://a", "2"), keepUntil: now + 100, now: now)
        #expect(cache.count == 2)
        try cache.accept(token("https://b", "1"), keepUntil: now + 100, now: now + 1)
        // Past its keep-until time, a jti is forgotten.
        try cache.accept(token("https://a", "1"), keepUntil: now + 300, now: now + 101)
    }

    @Test func withoutOpenIDSettingsThereIsNothingToVerifyWith() async throws {
        let configuration = try OAuth2Configuration(
            clientID: "app", authorizationEndpoint: URL(string: "https://id.example/authorize"),
            tokenEndpoint: IDTokenVerificationTests.tokenURL)
        let provider = try OAuth2Provider(configuration: configuration, transport: CannedTransport())
        await #expect(throws: OAuth2Error.self) { _ = try await provider.verifyLogoutToken("a.b.c") }
        do {
            _ = try await provider.verifyLogoutToken("a.b.c")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }

    @Test func aLogoutEndsTheSessionsOfItsSidOrElseOfItsSub() throws {
        let base: [String: JSONValue] = [
            "iss": .string("https://id.example"), "sub": .string("alice"), "aud": .string("app"), "iat": .number(0),
            "exp": .number(1), "sid": .string("s1"),
        ]
        var other = base
        other["sid"] = .string("s2")
        let signIn = try IDToken(claims: base)
        let otherSession = try IDToken(claims: other)
        let events = JSONValue.object([LogoutToken.backChannelLogoutEvent: .object([:])])
        func logout(_ changes: [String: JSONValue?]) throws -> LogoutToken {
            var claims = base.merging(["jti": .string("j"), "events": events]) { $1 }
            for (name, value) in changes { claims[name] = value }
            return try LogoutToken(claims: claims)
        }
        #expect(try logout([:]).ends(signIn))
        #expect(try !logout([:]).ends(otherSession))
        #expect(try logout(["sub": nil]).ends(signIn))
        #expect(try logout(["sid": nil]).ends(otherSession))
        #expect(try !logout(["sid": nil, "sub": .string("bob")]).ends(signIn))
        #expect(try !logout(["iss": .string("https://other.example")]).ends(signIn))
    }
}
