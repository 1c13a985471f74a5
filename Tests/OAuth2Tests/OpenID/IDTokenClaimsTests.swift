import Foundation
import Testing
@testable import OAuth2

/// The claim checks of an ID token whose signature was verified (the JWS
/// itself is tested in JOSE/ and, end to end, in IDTokenVerificationTests).
@Suite struct IDTokenClaimsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let verifier = IDTokenVerifier(
        settings: OpenIDSettings(jwksURI: URL(string: "https://id.example/jwks")!, clockLeeway: .seconds(30)),
        issuer: "https://id.example",
        clientID: "app"
    )

    static func claims(_ changes: [String: JSONValue?] = [:]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string("https://id.example"),
            "sub": .string("user-1"),
            "aud": .string("app"),
            "exp": .number(now.timeIntervalSince1970 + 300),
            "iat": .number(now.timeIntervalSince1970 - 5),
            "nonce": .string("n-0S6_WzA2Mj"),
            "email": .string("alice@example.com"),
            "email_verified": .bool(true),
            "name": .string("Alice"),
        ]
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    func check(
        _ changes: [String: JSONValue?] = [:],
        expectation: IDTokenVerifier.Expectation = .signIn(nonce: Secret("n-0S6_WzA2Mj")),
        accessToken: Secret? = nil,
        algorithm: JWSAlgorithm = .rs256
    ) throws(OAuth2Error) -> IDToken {
        let token = try IDToken(claims: Self.claims(changes))
        try Self.verifier.checkClaims(token, algorithm: algorithm, expectation: expectation, accessToken: accessToken, now: Self.now)
        return token
    }

    func code(
        _ changes: [String: JSONValue?] = [:], expectation: IDTokenVerifier.Expectation = .signIn(nonce: Secret("n-0S6_WzA2Mj")),
        accessToken: Secret? = nil
    ) -> OAuth2Error.Code? {
        FlowFixtures.error { () throws(OAuth2Error) in try check(changes, expectation: expectation, accessToken: accessToken) }?.code
    }

    @Test func aGoodTokenPassesAndExposesItsClaims() throws {
        let token = try check()
        #expect(token.issuer == "https://id.example")
        #expect(token.subject == "user-1")
        #expect(token.audience == ["app"])
        #expect(token.email == "alice@example.com")
        #expect(token.emailVerified == true)
        #expect(token.name == "Alice")
        #expect(token.nonce == "n-0S6_WzA2Mj")
        #expect(token.expiresAt == Self.now.addingTimeInterval(300))
    }

    @Test func missingOrMistypedRegisteredClaimsAreInvalid() {
        for name in ["iss", "sub", "aud", "exp", "iat"] {
            #expect(code([name: .none]) == .invalidIDToken, "\(name) missing")
        }
        #expect(code(["exp": .string("tomorrow")]) == .invalidIDToken)
        #expect(code(["aud": .array([.string("app"), .number(1)])]) == .invalidIDToken)
        #expect(code(["aud": .array([])]) == .invalidIDToken)
        #expect(code(["sub": .string("")]) == .invalidIDToken)
        #expect(code(["azp": .bool(true)]) == .invalidIDToken)
        #expect(code(["nonce": .number(5)]) == .invalidIDToken)
    }

    @Test func issuerMustBeExact() {
        #expect(code(["iss": .string("https://id.example/")]) == .issuerMismatch)
        #expect(code(["iss": .string("https://evil.example")]) == .issuerMismatch)
    }

    @Test func audienceMustContainTheClientAndAzpMustBeTheClient() throws {
        #expect(code(["aud": .string("other-app")]) == .audienceMismatch)
        #expect(code(["aud": .array([.string("app"), .string("other")])]) == .audienceMismatch)
        #expect(code(["aud": .array([.string("app"), .string("other")]), "azp": .string("other")]) == .audienceMismatch)
        #expect(code(["azp": .string("other")]) == .audienceMismatch)
        let token = try check(["aud": .array([.string("app"), .string("other")]), "azp": .string("app")])
        #expect(token.authorizedParty == "app")
    }

    @Test func timesAreCheckedWithTheLeeway() throws {
        let t = Self.now.timeIntervalSince1970
        #expect(code(["exp": .number(t - 31)]) == .idTokenExpired)
        _ = try check(["exp": .number(t - 29)])
        #expect(code(["iat": .number(t + 31)]) == .idTokenNotYetValid)
        _ = try check(["iat": .number(t + 29)])
        #expect(code(["nbf": .number(t + 31)]) == .idTokenNotYetValid)
        _ = try check(["nbf": .number(t + 29)])
    }

    @Test func theNonceMustBeTheOneSent() throws {
        #expect(code(["nonce": .none]) == .nonceMismatch)
        #expect(code(["nonce": .string("n-0S6_WzA2Mk")]) == .nonceMismatch)
        // Without a nonce sent (a refresh, another grant), none is required.
        _ = try check(["nonce": .none], expectation: .any)
        _ = try check(["nonce": .none], expectation: .signIn(nonce: nil))
    }

    @Test func aRefreshedTokenMustBeForTheSameUser() throws {
        let signedIn = try check()
        _ = try check(["nonce": .none], expectation: .refresh(previous: signedIn))
        #expect(code(["sub": .string("user-2")], expectation: .refresh(previous: signedIn)) == .subjectMismatch)
    }

    @Test func atHashIsCheckedWhenPresent() throws {
        // OpenID Connect Core §A.3: this access token's RS256 at_hash.
        let accessToken = Secret("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y")
        _ = try check(["at_hash": .string("77QmUPtjPfzWtF2AnpK9RQ")], accessToken: accessToken)
        #expect(code(["at_hash": .string("77QmUPtjPfzWtF2AnpK9RR")], accessToken: accessToken) == .accessTokenHashMismatch)
        #expect(IDTokenVerifier.accessTokenHash(accessToken, algorithm: .rs256) == "77QmUPtjPfzWtF2AnpK9RQ")
    }

    @Test func descriptionsShowNoClaimButIssuerAndSubject() throws {
        let token = try check()
        var dumped = ""
        dump(token, to: &dumped)
        for text in [String(describing: token), String(reflecting: token), dumped] {
            #expect(!text.contains("alice@example.com"))
            #expect(!text.contains("n-0S6_WzA2Mj"))
        }
        #expect(String(describing: token).contains("user-1"))
    }
}
