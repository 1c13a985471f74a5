import Foundation
import OAuth2
import Testing

/// The logout plans (the suite's OIDCCClientLogoutTestPlan and the
/// RP-Initiated, front- and back-channel plans). The library's part of
/// logout is RP-initiated logout's request (OpenID Connect RP-Initiated
/// Logout 1.0 §2); what the other modules test is the app's or the browser's,
/// or not supported (README.md).
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.requirement))
struct OIDCCClientLogoutTests {
    /// "terminate the session by calling the end_session_endpoint
    /// (RP-Initiated Logout) … then the RP is expected to handle post logout
    /// URI redirect": the provider checks that `id_token_hint` is an ID token
    /// it issued to this client and that `post_logout_redirect_uri` is the
    /// registered one, and sends the browser back there with the `state`.
    /// (The module then sends a back- or front-channel logout request to the
    /// app's own logout URI: the app's part, not the library's.)
    @Test("oidcc-client-test-rp-init-logout") func theEndSessionRequestIsAcceptedAndLeadsBack() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-rp-init-logout")
        let client = try await run.signedInClient(try await run.provider())
        let state = "logout-state-1"
        let url = try #require(try await client.endSessionURL(postLogoutRedirectURI: ModuleRun.postLogoutRedirectURI, state: state))
        let response = try await ModuleRun.transport.send(HTTPTransportRequest(url: url, redirects: .never))
        #expect(response.headers[.location] == ModuleRun.postLogoutRedirectURI.absoluteString + "?state=\(state)")
        let endSession = try #require(try await run.log().first { $0.event == "end_session" })
        #expect(endSession["hint_issued_here"] as? Bool == true)
        #expect(endSession["client_id"] as? String == ModuleRun.clientID)
        try await client.logout()
        #expect(try await client.idToken() == nil)
    }
}
