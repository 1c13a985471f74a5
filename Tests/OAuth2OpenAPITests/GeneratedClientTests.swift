import Foundation
import MetricsTestKit
import OAuth2
import OAuth2OpenAPI
import OAuth2Testing
import OpenAPIRuntime
import Testing

/// The client generated from openapi.yaml (Generated/), signed by
/// ``OAuth2Middleware`` and sent by ``HTTPTransportClientTransport`` over libcurl,
/// against the real local provider. What the API server saw is recorded
/// below the OpenAPI transport; the client's own token requests are read
/// from its metrics (other suites use the same provider and client at the
/// same time, so the provider's counts are not this test's).
@Suite(
    .serialized,
    .enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
final class GeneratedClientTests {
    let curl = CurlTransport()
    let api: RecordingTransport
    let metrics = TestMetrics()

    /// The refreshes this test's client made, as its metrics counted them.
    private var refreshes: Int64 {
        metrics.counterTotal(
            label: "oauth2_token_requests_total", dimensions: [("grant_type", "refresh_token"), ("outcome", "success")])
    }

    init() {
        api = RecordingTransport(curl)
    }

    deinit {
        let curl = curl
        Task { await curl.shutdown() }
    }

    /// A generated client for `serverURL`, signing for `signs` (default: the same origin).
    private func generatedClient(_ account: any TokenSource, serverURL: URL, signs: URL? = nil) -> Client {
        Client(
            serverURL: serverURL,
            transport: HTTPTransportClientTransport(api),
            middlewares: [OAuth2Middleware(tokenSource: account, serverURL: signs ?? serverURL)]
        )
    }

    private func underlyingOAuth2Error(_ error: (any Error)?) -> OAuth2Error? {
        (error as? ClientError)?.underlyingError as? OAuth2Error
    }

    @Test func aSignedCallReturnsTheUser() async throws {
        let provider = try Provider.main()
        let account = try await provider.signedInClient(transport: curl, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        let client = generatedClient(account, serverURL: try provider.serverURL())

        let identity = try await client.getMe().ok.body.json

        #expect(identity.username == "alice")
        #expect(api.requests.count == 1)
        let token = try #require(account.currentToken).accessToken.value
        #expect(api.requests.first?.headers[.authorization] == "Bearer \(token)")
    }

    @Test func aRequestBodyArrivesAsJSON() async throws {
        let provider = try Provider.main()
        let account = try await provider.signedInClient(transport: curl, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        let client = generatedClient(account, serverURL: try provider.serverURL())

        let answer = try await client.echo(body: .json(.init(message: "hello, API", count: 3))).ok.body.json

        #expect(answer.echo == .init(message: "hello, API", count: 3))
        #expect(answer.username == "alice")
    }

    @Test func anExpiredTokenIsRefreshedBeforeTheCall() async throws {
        let provider = try Provider.main()
        let clock = ManualClock(Date())
        let account = try await provider.signedInClient(
            transport: curl, clock: clock, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        let first = try #require(account.currentToken)
        let client = generatedClient(account, serverURL: try provider.serverURL())
        let before = refreshes
        // Past the token's end by the client's clock: the client knows it expired.
        clock.advance(by: .seconds(try #require(first.expiresAt).timeIntervalSince(clock.now()) + 1))

        let identity = try await client.getMe().ok.body.json

        #expect(identity.username == "alice")
        #expect(refreshes == before + 1)
        #expect(api.requests.count == 1, "refreshed before the call: no 401 and no retry")
        #expect(api.requests.first?.headers[.authorization] != "Bearer \(first.accessToken.value)")
    }

    /// Signed in, then the token expired at the provider (its test endpoint):
    /// the provider rejects a token the client believes fresh, as it would one
    /// revoked or otherwise made invalid. (With 2-second tokens and a sleep, a
    /// provider slower than 2 seconds on a loaded machine also rejected the
    /// refreshed token.)
    private func signedInWithAStaleToken(_ provider: Provider) async throws -> OAuth2Client {
        let account = try await provider.signedInClient(transport: curl, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        try await provider.expireAccessToken(try #require(account.currentToken).accessToken)
        return account
    }

    /// The first audit's D-5 through a generated client: its transport
    /// follows redirects on its own (as AsyncHTTPClient's and URLSession's
    /// do), and the API has moved to another origin (the provider under
    /// `localhost`), which never sees the token and answers 401. That 401
    /// must cost no refresh, and the second one not the token.
    @Test func a401FromAnOriginAFollowingTransportWasRedirectedToCostsNoRefreshAndNoToken() async throws {
        let provider = try Provider.main()
        let account = try await provider.signedInClient(transport: curl, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        let origin = try provider.serverURL()
        let moved = try #require(URL(string: origin.absoluteString + "/test/moved-to-localhost"))
        let client = Client(
            serverURL: moved,
            transport: FollowingCurlClientTransport(curl),
            middlewares: [OAuth2Middleware(tokenSource: account, serverURL: origin)]
        )
        let before = refreshes

        for _ in 0..<2 {
            let output = try await client.getMe()
            guard case .unauthorized = output else {
                Issue.record("expected the other origin's 401 back, got \(output)")
                return
            }
        }

        #expect(refreshes == before)
        #expect(account.currentToken != nil)
        #expect(try await generatedClient(account, serverURL: origin).getMe().ok.body.json.username == "alice")
    }

    @Test func aTokenTheServerRejectsIsRefreshedOnceAndTheCallRetriedOnce() async throws {
        let provider = try Provider.main()
        let account = try await signedInWithAStaleToken(provider)
        let rejected = try #require(account.currentToken).accessToken
        let client = generatedClient(account, serverURL: try provider.serverURL())
        let before = refreshes

        let identity = try await client.getMe().ok.body.json

        #expect(identity.username == "alice")
        #expect(refreshes == before + 1)
        #expect(api.requests.count == 2)
        #expect(api.requests.first?.headers[.authorization] == "Bearer \(rejected.value)")
        let fresh = try #require(account.currentToken).accessToken
        #expect(fresh != rejected)
        #expect(api.requests.last?.headers[.authorization] == "Bearer \(fresh.value)")
    }

    @Test func theRequestBodyIsSentAgainOnTheRetry() async throws {
        let provider = try Provider.main()
        let account = try await signedInWithAStaleToken(provider)
        let client = generatedClient(account, serverURL: try provider.serverURL())

        let answer = try await client.echo(body: .json(.init(message: "sent twice", count: 2))).ok.body.json

        #expect(answer.echo == .init(message: "sent twice", count: 2))
        #expect(api.requests.count == 2)
        let bodies = api.requests.map { $0.body }
        #expect(bodies.first != nil && bodies.first == bodies.last)
    }

    @Test func aGrantRevokedAtTheProviderEndsInATypedErrorAfterOneAttempt() async throws {
        let provider = try Provider.main()
        let account = try await provider.signedInClient(transport: curl, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        // Revoking the refresh token revokes its access token too: nothing left to refresh with.
        try await provider.revoke(try #require(account.currentToken?.refreshToken), hint: "refresh_token")
        let client = generatedClient(account, serverURL: try provider.serverURL())

        let error = await #expect(throws: ClientError.self) { _ = try await client.getMe() }

        #expect(underlyingOAuth2Error(error)?.code == .reauthorizationRequired)
        #expect(api.requests.count == 1, "the refresh failed: no retry")
        #expect(account.currentToken == nil, "the lost grant's token is deleted")
    }

    @Test func aServerURLOnAnotherOriginNeverGetsTheToken() async throws {
        let provider = try Provider.main()
        let account = try await provider.signedInClient(transport: curl, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        let server = try provider.serverURL()
        // Same server, another host name: another origin (RFC 6454).
        let elsewhere = try #require(URL(string: server.absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")))
        let client = generatedClient(account, serverURL: elsewhere, signs: server)

        let output = try await client.getMe()

        // The other origin's 401 comes back as the documented response, untouched: no refresh, no retry.
        guard case .unauthorized = output else {
            Issue.record("expected the documented 401, got \(output)")
            return
        }
        #expect(api.requests.count == 1)
        #expect(api.requests.first?.url.host == "localhost")
        #expect(api.requests.first?.headers[.authorization] == nil)
    }

    @Test func aMissingScopeIsReportedAndNotRetried() async throws {
        let provider = try Provider.main()
        let account = try await provider.signedInClient(transport: curl, telemetry: OAuth2Telemetry(metricsFactory: metrics))
        let client = generatedClient(account, serverURL: try provider.serverURL())
        let before = refreshes

        let error = await #expect(throws: ClientError.self) { _ = try await client.getAdmin() }

        #expect(underlyingOAuth2Error(error)?.code == .insufficientScope)
        #expect(underlyingOAuth2Error(error)?.httpStatus == 403)
        #expect(api.requests.count == 1)
        #expect(refreshes == before)
    }

    @Test func userinfoAnswersForAnOpenIDToken() async throws {
        let provider = try Provider.main()
        let account = try await provider.signedInClient(
            transport: curl, scopes: ["openid", "email"], telemetry: OAuth2Telemetry(metricsFactory: metrics))
        let client = generatedClient(account, serverURL: try provider.serverURL())

        let claims = try await client.getUserInfo().ok.body.json

        #expect(!claims.sub.isEmpty)
        #expect(claims.email == "alice@example.com")
    }
}

/// A `ClientTransport` over a ``CurlTransport`` told to follow redirects,
/// which it does by its own rules (the token's field stays on its origin):
/// the kind of next hop that hides from the middleware which URL answered.
struct FollowingCurlClientTransport: ClientTransport {
    let transport: CurlTransport

    init(_ transport: CurlTransport) {
        self.transport = transport
    }

    func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        let url = try #require(URL(string: baseURL.absoluteString + (request.path ?? "")))
        var sent = HTTPTransportRequest(method: request.method, url: url, headers: request.headerFields)
        sent.redirects = .follow
        let response = try await transport.send(sent)
        return (response.head, response.body.isEmpty ? nil : HTTPBody(response.body))
    }
}
