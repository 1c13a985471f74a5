import Foundation
import LoopbackSockets
import OAuth2
import Testing

/// The logout plans (the suite's OIDCCClientLogoutTestPlan and the
/// RP-Initiated, front- and back-channel plans). The library's part of
/// logout is RP-initiated logout's request (OpenID Connect RP-Initiated
/// Logout 1.0 §2) and verifying the back-channel logout token the provider
/// then POSTs (Back-Channel Logout 1.0 §2.6); what the other modules test is
/// the app's or the browser's (README.md).
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

    // MARK: - Back-channel logout (the suite's OIDCCClientTestBackChannelLogout*)

    /// What one back-channel module run came to: the ID token of the
    /// sign-in, op.py's record of the POST to the app's `backchannel_logout_uri`
    /// (the status and `Cache-Control` it got), and what the library made of it.
    struct BackChannelOutcome {
        let idToken: IDToken
        let status: Int?
        let cacheControl: String?
        let body: String?
        let outcomes: [Result<LogoutToken, OAuth2Error>]

        var refusal: OAuth2Error.Code? {
            guard outcomes.count == 1, case .failure(let error) = outcomes[0] else { return nil }
            return error.code
        }

        /// The module's EnsureBackChannelLogoutUriResponseStatusCodeIs400, and
        /// §2.8's error object and `Cache-Control: no-store` with it; the
        /// library refused for `code`, and the app ended nothing.
        func expectRefused(_ code: OAuth2Error.Code, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(status == 400, sourceLocation: sourceLocation)
            #expect(refusal == code, sourceLocation: sourceLocation)
            #expect(cacheControl == "no-store", sourceLocation: sourceLocation)
            let object = (try? JSONSerialization.jsonObject(with: Data((body ?? "").utf8))) as? [String: String]
            #expect(object == ["error": "invalid_request", "error_description": code.rawValue], sourceLocation: sourceLocation)
        }
    }

    /// The module's flow: sign in, RP-initiated logout (whose end-session
    /// request makes op.py POST a logout token to the app's route, answered
    /// by the library's verification), then back to the post-logout URI.
    /// The client expects RS256 ID tokens, as the module's client registers
    /// (`id_token_signed_response_alg`, RS256 by default): not every
    /// algorithm discovery lists.
    func backChannelLogout(_ module: String) async throws -> BackChannelOutcome {
        let run = try ConformanceProvider.run(module)
        var configuration = try await run.discover()
        configuration.openID?.signingAlgorithms = [.rs256]
        let provider = try await run.provider(configuration)
        let receiver = try BackChannelLogoutRoute(provider: provider)
        defer { receiver.stop() }
        try await run.registerBackChannelLogoutURI(receiver.url)
        let client = try await run.signedInClient(provider)
        let idToken = try #require(try await client.idToken())
        let url = try #require(try await client.endSessionURL(postLogoutRedirectURI: ModuleRun.postLogoutRedirectURI, state: "bcl"))
        let response = try await ModuleRun.transport.send(HTTPTransportRequest(url: url, redirects: .never))
        #expect(response.headers[.location] == ModuleRun.postLogoutRedirectURI.absoluteString + "?state=bcl")
        let sent = try #require(try await run.log().first { $0.event == "backchannel_logout" })
        #expect(sent["error"] == nil, "op.py could not reach the app: \(sent["error"] ?? "")")
        return BackChannelOutcome(
            idToken: idToken, status: sent["status"] as? Int, cacheControl: sent["cache_control"] as? String,
            body: sent["body"] as? String, outcomes: receiver.outcomes)
    }

    /// "at this point the conformance suite will send a back channel logout
    /// request to the RP": a valid logout token (RS256, the session's `sid`,
    /// `sub`, an `ignored_claim` and an `ignored_parameter` to ignore) must
    /// be answered 200 (EnsureBackChannelLogoutUriResponseStatusCodeIs200),
    /// with `Cache-Control: no-store`, and the app learns which session ended.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout") func aValidLogoutTokenIsAnswered200AndNamesTheSession() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout")
        #expect(outcome.status == 200)
        #expect(outcome.cacheControl == "no-store")
        let logout = try #require(try outcome.outcomes.first?.get())
        #expect(outcome.outcomes.count == 1)
        #expect(logout.sessionID != nil)
        #expect(logout.sessionID == outcome.idToken.sessionID)
        #expect(logout.subject == outcome.idToken.subject)
        #expect(logout.ends(outcome.idToken))
    }

    /// "a logout_token signed using alg 'none' which should be rejected": 400.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout-alg-none") func aLogoutTokenSignedNoneIsAnswered400() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout-alg-none")
        outcome.expectRefused(.unsupportedAlgorithm)
    }

    /// "a logout_token signed using a wrong algorithm which should be
    /// rejected": ES256 with the provider's own P-256 key, for a client that
    /// expects RS256 (OIDCCSignLogoutTokenWithWrongAlgorithm): 400.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-alg") func aLogoutTokenWithAnotherAlgorithmIsAnswered400() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-alg")
        outcome.expectRefused(.unsupportedAlgorithm)
    }

    /// "without an events claim in the logout_token which should be rejected": 400.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout-no-event") func aLogoutTokenWithoutEventsIsAnswered400() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout-no-event")
        outcome.expectRefused(.invalidLogoutToken)
    }

    /// "an invalid events claim" (only `http://schemas.openid.net/event/foobar`): 400.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-event") func aLogoutTokenWithAnotherEventIsAnswered400() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-event")
        outcome.expectRefused(.invalidLogoutToken)
    }

    /// "a nonce claim in the logout_token which should be rejected": 400.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout-with-nonce") func aLogoutTokenWithANonceIsAnswered400() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout-with-nonce")
        outcome.expectRefused(.invalidLogoutToken)
    }

    /// "an invalid aud claim" (the client id + `INVALID`): 400.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-aud") func aLogoutTokenForAnotherClientIsAnswered400() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-aud")
        outcome.expectRefused(.audienceMismatch)
    }

    /// "an invalid iss claim" (the issuer + `INVALID`): 400.
    @Test("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-iss") func aLogoutTokenOfAnotherIssuerIsAnswered400() async throws {
        let outcome = try await backChannelLogout("oidcc-client-test-rp-backchannel-rpinitlogout-wrong-iss")
        outcome.expectRefused(.issuerMismatch)
    }
}
