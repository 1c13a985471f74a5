import Foundation
import OAuth2
import Testing

/// The Basic RP certification profile (the suite's OIDCCClientBasicTestPlan:
/// `response_type=code`, the default response mode, `client_secret_basic`),
/// one test per module, in the plan's order. Each module's expectation is its
/// `@PublishTestModule` summary; those that extend
/// AbstractOIDCCClientTestExpectingNothingInvalidIdToken fail a client that
/// goes on to the userinfo endpoint after the bad ID token.
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.requirement))
struct OIDCCClientBasicTests {
    /// "The client is expected to make an authentication request (also a
    /// token request and a userinfo request where applicable)".
    @Test("oidcc-client-test") func theCodeFlowSignsInAndAsksUserinfo() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test")
        let client = try await run.signedInClient(try await run.provider())
        let idToken = try #require(try await client.idToken())
        #expect(idToken.issuer == run.issuer)
        #expect(idToken.subject == "user-subject-1234531")
        #expect(try await client.userInfo().subject == idToken.subject)
        #expect(try await run.calls() == ["discovery", "authorization", "token", "jwks", "userinfo"])
        let authorization = try #require(try await run.log().first { $0.event == "authorization" })
        #expect(authorization["nonce"] as? Bool == true, "a nonce is sent with openid")
        #expect(authorization["nonce_interoperable"] as? Bool == true, "URL-safe and at most 43 characters, as the suite checks")
    }

    @Test("oidcc-client-test-invalid-iss") func anIDTokenFromAnotherIssuerIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-invalid-iss", .issuerMismatch)
    }

    @Test("oidcc-client-test-missing-sub") func anIDTokenWithoutSubIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-missing-sub", .invalidIDToken)
    }

    @Test("oidcc-client-test-invalid-aud") func anIDTokenForAnotherClientIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-invalid-aud", .audienceMismatch)
    }

    @Test("oidcc-client-test-missing-iat") func anIDTokenWithoutIatIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-missing-iat", .invalidIDToken)
    }

    /// "Use the single matching key out of the Issuer's published set": the
    /// set holds, without `kid`s or `alg`s, one RSA, one P-256, one secp256k1
    /// (a curve the library does not read, skipped) and one Ed25519 key.
    @Test("oidcc-client-test-kid-absent-single-jwks") func withoutKidTheOneMatchingKeyVerifies() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-kid-absent-single-jwks")
        let token = try await run.signIn(try await run.provider())
        #expect(token.idToken?.subject == "user-subject-1234531")
    }

    /// "The RP can … reject the ID Token … Or it can just test all possible
    /// keys and hit upon one that works": the library tries each key that
    /// can verify the algorithm (three RSA keys here, one of them the signer's).
    @Test("oidcc-client-test-kid-absent-multiple-jwks") func withoutKidEveryCandidateKeyIsTried() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-kid-absent-multiple-jwks")
        let token = try await run.signIn(try await run.provider())
        #expect(token.idToken?.subject == "user-subject-1234531")
    }

    /// The provider lists RS256 only: the library takes that from discovery.
    @Test("oidcc-client-test-idtoken-sig-rs256") func anRS256IDTokenIsAccepted() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-idtoken-sig-rs256")
        let provider = try await run.provider()
        #expect(provider.configuration.openID?.signingAlgorithms == [.rs256])
        #expect(try await run.signIn(provider).idToken != nil)
    }

    /// "The client can either accept the unsigned id_token … or reject the
    /// unsigned id_token and stop without sending a userinfo request": the
    /// library refuses `none` always, though the discovery document lists it.
    @Test("oidcc-client-test-idtoken-sig-none") func anUnsignedIDTokenIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-idtoken-sig-none", .unsupportedAlgorithm)
    }

    @Test("oidcc-client-test-invalid-sig-rs256") func anRS256IDTokenWithABadSignatureIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-invalid-sig-rs256", .invalidSignature)
    }

    /// "The client must identify the invalid 'sub' value and reject the
    /// UserInfo Response".
    @Test("oidcc-client-test-userinfo-invalid-sub") func aUserinfoAnswerAboutAnotherUserIsRefused() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-userinfo-invalid-sub")
        let client = try await run.signedInClient(try await run.provider())
        let error = await #expect(throws: OAuth2Error.self) { try await client.userInfo() }
        #expect(error?.code == .subjectMismatch)
    }

    @Test("oidcc-client-test-nonce-invalid") func anIDTokenWithAnotherNonceIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-nonce-invalid", .nonceMismatch)
    }

    /// "The client is expected to request claims using one of more of the
    /// following scope values: profile, email, phone, address" (the provider
    /// refuses an authorization request without one).
    @Test("oidcc-client-test-scope-userinfo-claims") func claimsAskedForByScopeComeFromUserinfo() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-scope-userinfo-claims")
        let client = try await run.signedInClient(try await run.provider(), scopes: ["openid", "email", "profile"])
        let info = try await client.userInfo()
        #expect(info.email == "user@example.com")
        #expect(info.name == "Demo T. User")
        #expect(info.claims["phone_number"] == nil, "phone was not asked for")
    }

    /// "The client MUST use client_secret_basic authentication method": the
    /// provider refuses any other at its token endpoint.
    @Test("oidcc-client-test-client-secret-basic") func theTokenRequestAuthenticatesWithBasic() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-client-secret-basic")
        _ = try await run.signIn(try await run.provider())
        let token = try #require(try await run.log().first { $0.event == "token" })
        #expect(token["client_authentication"] as? String == "client_secret_basic")
    }
}

/// The expectation of the modules that extend
/// AbstractOIDCCClientTestExpectingNothingInvalidIdToken: the client gets the
/// token response (the provider did answer) and refuses its ID token with
/// `code`, and goes no further: the userinfo endpoint is never called.
func expectIDTokenRefused(
    _ module: String, _ code: OAuth2Error.Code, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let run = try ConformanceProvider.run(module)
    let provider = try await run.provider()
    let error = await #expect(throws: OAuth2Error.self, sourceLocation: sourceLocation) { try await run.signIn(provider) }
    #expect(error?.code == code, sourceLocation: sourceLocation)
    let calls = try await run.calls()
    #expect(calls.contains("token"), "the refusal is of the token response's ID token", sourceLocation: sourceLocation)
    #expect(!calls.contains("userinfo"), sourceLocation: sourceLocation)
    #expect(try await provider.client(account: "user").idToken() == nil, sourceLocation: sourceLocation)
}
