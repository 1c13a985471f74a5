import Foundation
@testable import OAuth2
import OAuth2Testing
import Testing

@Suite struct OAuth2ClientAuthorizationTests {
    func redirect(_ pending: PendingAuthorization, code: String = "code-abc", extra: String = "") -> String {
        "\(pending.redirectURI.absoluteString)?code=\(code)&state=\(pending.state)\(extra)"
    }

    @Test func codeFlowExchangesCodeVerifierAndSameRedirectURI() async throws {
        let harness = try ClientHarness()
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI, scopes: ["read", "write"])
        let query = try #require(URLComponents(url: pending.url, resolvingAgainstBaseURL: false)?.queryItems)
        let params = Dictionary(query.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
        #expect(params["response_type"] == "code")
        #expect(params["client_id"] == "client-1")
        #expect(params["redirect_uri"] == Fixture.redirectURI.absoluteString)
        #expect(params["scope"] == "read write")
        #expect(params["code_challenge_method"] == "S256")
        #expect(params["code_challenge"] == PKCE.challenge(for: pending.codeVerifier))
        #expect(params["state"] == pending.state)

        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let token = try await client.authenticate(.authorizationCode(redirect: redirect(pending)))
        #expect(token.accessToken.value == Fixture.accessToken)
        #expect(token.scopes == ["read", "write"])
        let request = try #require(harness.tokenRequests.first)
        #expect(request.method == .post)
        let fields = Fixture.formFields(request.body)
        #expect(fields["grant_type"] == "authorization_code")
        #expect(fields["code"] == "code-abc")
        #expect(fields["code_verifier"] == pending.codeVerifier.value)
        #expect(fields["redirect_uri"] == Fixture.redirectURI.absoluteString)
        #expect(try await harness.store.load(account: "alice") == token)
    }

    @Test func aNarrowedScopeIsVisibleToTheCaller() async throws {
        let harness = try ClientHarness()
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI, scopes: ["read", "write"])
        harness.transport.enqueue(json: Fixture.tokenJSON(scope: "read"), for: Fixture.tokenURL)
        let token = try await client.authenticate(.authorizationCode(redirect: redirect(pending)))

        // What was granted, and what was asked for, side by side.
        #expect(token.scopes == ["read"])
        #expect(token.grant?.scopes == ["read", "write"])
        #expect(token.description.contains("scopes read"))
        #expect(!token.description.contains("write"))
        let stored = try #require(try await harness.store.load(account: "alice"))
        #expect(stored.scopes == ["read"])
        #expect(stored.grant?.scopes == ["read", "write"])
        #expect(try await client.token().scopes == ["read"])

        // A refresh that names no scope keeps the narrowed grant, not the request.
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2"), for: Fixture.tokenURL)
        let refreshed = try await client.refreshAccessToken()
        #expect(refreshed.scopes == ["read"])
        #expect(refreshed.grant?.scopes == ["read", "write"])
    }

    @Test func redirectCannotBeReplayed() async throws {
        let harness = try ClientHarness()
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        try await client.authenticate(.authorizationCode(redirect: redirect(pending)))
        let implicit = await oauth2Error { try await client.authenticate(.authorizationCode(redirect: redirect(pending))) }
        #expect(implicit?.code == .stateMismatch)
        // Even when the caller hands the pending authorization back, and on another client.
        let explicit = await oauth2Error {
            try await harness.client("bob").authenticate(.authorizationCode(redirect: redirect(pending), pending: pending))
        }
        #expect(explicit?.code == .stateMismatch)
        #expect(harness.tokenRequests.count == 1)
    }

    @Test func pendingAuthorizationSurvivesASessionRoundTrip() async throws {
        let harness = try ClientHarness()
        let pending = try await harness.client().authorizationURL(redirectURI: Fixture.redirectURI)
        let stored = try JSONEncoder().encode(pending)
        let restored = try JSONDecoder().decode(PendingAuthorization.self, from: stored)
        #expect(restored == pending)
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        // Another instance (another client) finishes the flow.
        let token = try await harness.client("alice").authenticate(.authorizationCode(redirect: redirect(restored), pending: restored))
        #expect(token.accessToken.value == Fixture.accessToken)
    }

    @Test func forgedStateIsRefusedWithoutATokenRequest() async throws {
        let harness = try ClientHarness()
        let delegate = RecordingDelegate()
        let client = harness.client(delegate: delegate)
        _ = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        let error = await oauth2Error {
            try await client.authenticate(.authorizationCode(redirect: "\(Fixture.redirectURI.absoluteString)?code=x&state=forged"))
        }
        #expect(error?.code == .stateMismatch)
        #expect(harness.transport.requests.isEmpty)
        #expect(delegate.events == [.failedToGetAccessToken(try #require(error))])
    }

    @Test func providerErrorInTheRedirectIsTyped() async throws {
        let harness = try ClientHarness()
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        let error = await oauth2Error {
            try await client.authenticate(
                .authorizationCode(
                    redirect:
                        "\(Fixture.redirectURI.absoluteString)?error=access_denied&error_description=User+said+no&state=\(pending.state)"))
        }
        #expect(error?.code == .accessDenied)
        #expect(error?.errorDescription == "User said no")
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func openRedirectWithoutAFlowIsAStateMismatch() async throws {
        let harness = try ClientHarness()
        let error = await oauth2Error {
            try await harness.client().authenticate(.authorizationCode(redirect: "https://app.example/callback?code=x&state=y"))
        }
        #expect(error?.code == .stateMismatch)
    }

    @Test func failedExchangeIsReportedAndKeepsThePreviousToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let client = harness.client()
        _ = try await client.token()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        harness.transport.enqueue(json: "{\"error\":\"invalid_grant\"}", status: 400, for: Fixture.tokenURL)
        let error = await oauth2Error { try await client.authenticate(.authorizationCode(redirect: redirect(pending))) }
        #expect(error?.code == .invalidGrant)
        #expect(client.currentToken?.accessToken.value == Fixture.accessToken)
    }
}

@Suite struct OAuth2ClientFlowBeforeLoadTests {
    @Test func startingAFlowDoesNotHideTheStoredToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let client = harness.client()
        _ = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        let response = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(response.status == 200)
        #expect(harness.transport.requests.first?.authorization == "Bearer \(Fixture.accessToken)")
        #expect(client.currentToken?.accessToken.value == Fixture.accessToken)
    }
}
