import Foundation
import OAuth2
import Testing

/// The refresh token profile (the suite's OIDCCClientRefreshTokenProfileTestPlan).
/// The suite has three modules: a refreshed ID token with another `iss`, and
/// with another `sub`; it has none for `aud` or `azp` (the library's checks of
/// those on refresh are in Tests/OAuth2Tests/OpenID/RefreshedIDTokenTests.swift).
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.requirement))
struct OIDCCClientRefreshTokenTests {
    /// "obtain a refresh_token, then use the refresh_token to obtain a new
    /// access_token and call the userinfo endpoint using the newly obtained access_token".
    @Test("oidcc-client-test-refresh-token") func aRefreshedTokenCallsUserinfo() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-refresh-token")
        let client = try await run.signedInClient(try await run.provider())
        let signedIn = try await client.token()
        let refreshed = try await client.refreshAccessToken()
        #expect(refreshed.accessToken != signedIn.accessToken)
        #expect(refreshed.idToken?.subject == "user-subject-1234531")
        #expect(try await client.userInfo().subject == "user-subject-1234531")
        #expect(try await run.calls() == ["discovery", "authorization", "token", "jwks", "token", "userinfo"])
    }

    /// "detect that the id_token returned in refresh response contains an iss
    /// value that is not the same as the iss value in the original id_token"
    /// (OpenID Connect Core §12.2), and send no userinfo request after it.
    @Test("oidcc-client-test-refresh-token-invalid-issuer") func aRefreshedIDTokenFromAnotherIssuerIsRefused() async throws {
        try await expectRefreshRefused("oidcc-client-test-refresh-token-invalid-issuer", .issuerMismatch)
    }

    /// The same for `sub`: the refreshed ID token is about another user.
    @Test("oidcc-client-test-refresh-token-invalid-sub") func aRefreshedIDTokenForAnotherUserIsRefused() async throws {
        try await expectRefreshRefused("oidcc-client-test-refresh-token-invalid-sub", .subjectMismatch)
    }

    /// AbstractOIDCCClientTestExpectingNothingAfterRefreshResponse: the
    /// refresh is refused with `code`, and the account's next request fails
    /// with it too, without reaching the userinfo endpoint. (The rotated
    /// tokens are kept for a logout to revoke: README, "OpenID Connect".)
    private func expectRefreshRefused(_ module: String, _ code: OAuth2Error.Code) async throws {
        let run = try ConformanceProvider.run(module)
        let client = try await run.signedInClient(try await run.provider())
        let refresh = await #expect(throws: OAuth2Error.self) { try await client.refreshAccessToken() }
        #expect(refresh?.code == code)
        let userInfo = await #expect(throws: OAuth2Error.self) { try await client.userInfo() }
        #expect(userInfo?.code == code)
        let calls = try await run.calls()
        #expect(calls.filter { $0 == "token" }.count == 2, "the refresh reached the provider")
        #expect(!calls.contains("userinfo"))
    }
}
