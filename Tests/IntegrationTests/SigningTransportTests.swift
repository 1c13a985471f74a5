import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// An app's own transport (here one that records what it sends, as another
/// SDK's would) wrapped by the framework's ``SigningTransport``, against the
/// local providers. The refreshes are counted on the client's own transport:
/// other suites refresh with the same provider client at the same time, so
/// the provider's count for it is not this test's.
///
/// The refresh tests run on the provider with hour-long tokens, the client's
/// clock moved or the token expired at the provider: with 2-second tokens, a
/// provider that took over 2 seconds to answer on a loaded machine rightly
/// rejected the refreshed token too, and the client rightly refreshed again.
@Suite(
    .serialized,
    .enabled(
        if: Provider.mainIsConfigured && Provider.shortIsConfigured,
        "needs the local providers: `make test` starts them and sets OAUTH2_IT_PROVIDER and OAUTH2_IT_SHORT_PROVIDER"))
struct SigningTransportTests {
    /// A signed-in client of the `password` client, and the app's transport signed by it.
    ///
    /// - Parameter clock: the client's clock.
    private func signedIn(_ provider: Provider, clock: any OAuth2Clock = SystemClock()) async throws -> (
        client: OAuth2Client, api: SigningTransport, app: RecordingTransport, oauth: RecordingTransport
    ) {
        let client = try provider.client("password")
        let configuration = try OAuth2Configuration(
            clientID: client.clientID,
            clientSecret: Secret(client.clientSecret),
            tokenEndpoint: try #require(URL(string: provider.endpoints.token)),
            allowsPasswordGrant: true
        )
        let app = RecordingTransport()
        let tokenEndpoint = RecordingTransport()
        let oauth = try OAuth2Provider(configuration: configuration, transport: tokenEndpoint, clock: clock)
        let account = oauth.client(account: "alice")
        try await account.authenticate(.password(username: "alice", password: Secret(try provider.password(of: "alice"))))
        return (account, SigningTransport(wrapping: app, tokenSource: account), app, tokenEndpoint)
    }

    @Test func aTokenAboutToExpireIsRefreshedBeforeTheRequest() async throws {
        let provider = try Provider.main()
        let clock = ManualClock(Date())
        let (client, api, app, oauth) = try await signedIn(provider, clock: clock)
        let first = try #require(client.currentToken)
        let expiresAt = try #require(first.expiresAt)
        // Within the 60-second expiry skew by the client's clock; still valid at the provider.
        clock.advance(by: .seconds(expiresAt.timeIntervalSince(clock.now()) - 30))

        let response = try await api.send(HTTPTransportRequest(url: try #require(URL(string: provider.endpoints.apiMe))))

        #expect(response.status == 200)
        #expect(oauth.refreshGrants == [.ok])
        let sentWith = try #require(app.requests.last?.headers[.authorization])
        #expect(sentWith != "Bearer \(first.accessToken.value)")
        #expect(app.requests.count == 1, "no 401 and retry: the token was fresh when sent")
    }

    @Test func aTokenTheAPIRejectsIsRefreshedOnceAndTheRequestRetriedOnce() async throws {
        let provider = try Provider.main()
        let (client, api, app, oauth) = try await signedIn(provider)
        // Expired at the provider; fresh by the client's clock.
        let rejected = try #require(client.currentToken).accessToken
        try await provider.expireAccessToken(rejected)

        let response = try await api.send(HTTPTransportRequest(url: try #require(URL(string: provider.endpoints.apiMe))))

        #expect(response.status == 200)
        #expect(try JSONObject(String(decoding: response.body, as: UTF8.self)).string("username") == "alice")
        #expect(app.requests.count == 2)
        #expect(app.requests.first?.headers[.authorization] == "Bearer \(rejected.value)")
        #expect(app.requests.last?.headers[.authorization] != "Bearer \(rejected.value)")
        #expect(oauth.refreshGrants == [.ok])
    }

    @Test func theTokenNeverFollowsARedirectToAnotherOrigin() async throws {
        let provider = try Provider.short()
        let (_, api, app, _) = try await signedIn(provider)
        // Same port, another host name: another origin (RFC 6454).
        let elsewhere = provider.endpoints.apiMe.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let moved =
            provider.endpoints.testRedirect + "?to=" + (elsewhere.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        var request = HTTPTransportRequest(url: try #require(URL(string: moved)))
        request.redirects = .follow

        let response = try await api.send(request)

        // The other origin never saw the token: its 401 comes back as it is, no refresh.
        #expect(response.status == 401)
        #expect(app.requests.count == 2)
        #expect(app.requests.first?.headers[.authorization] != nil)
        #expect(app.requests.last?.url.host == "localhost")
        #expect(app.requests.last?.headers[.authorization] == nil)
    }

    @Test func theTokenIsNeverSentOverPlainHTTPToAnotherHost() async throws {
        let provider = try Provider.short()
        let (_, api, app, _) = try await signedIn(provider)

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await api.send(HTTPTransportRequest(url: try #require(URL(string: "http://api.example/me"))))
        }

        #expect(error?.code == .insecureEndpoint)
        #expect(app.requests.isEmpty)
    }
}
